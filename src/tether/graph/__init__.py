"""Task graphs: nodes that are runs, edges that are dependencies, workers that take nodes under leases.

``spec`` reads GRAPH.yaml; ``launch`` checks it and records ``graph.started``; ``fold`` is the graph's state
as a pure function of its log and the clock; ``worker`` turns that state into leases, child runs and
recorded transitions; ``draw`` shows it. docs/graphs.md says why it is built this way.
"""
