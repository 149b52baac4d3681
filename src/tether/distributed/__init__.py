"""Runs as Temporal workflows (docs/distributed.md): ``tether worker`` hosts them, ``tether submit`` starts one.

The workflow (:mod:`.workflow`) is deterministic and holds no run state: the log does. It loops over
activities (:mod:`.activities`), each of which advances the run by one step under its lease, through the same
resume path a local ``tether resume`` takes. Nothing here decides what a run does next; ``next_step`` does.
"""
