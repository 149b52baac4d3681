"""The web console (``tether serve``): runs, a run's live timeline, each turn's loop view, an approval inbox.

A layer above ``observe``: it reads the log as ``tether show`` does and answers approvals through the same
code as ``tether approve``. :mod:`.views` computes what a page shows (pure), :mod:`.app` serves it,
:mod:`.access` decides who may, and :mod:`.server` runs it.
"""
