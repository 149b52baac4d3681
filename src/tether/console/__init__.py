"""The web console (``tether serve``): runs, a run's live timeline, each turn's loop view, an approval inbox.

A layer above ``observe``: it reads the log as ``tether show`` does and answers approvals through the same
code as ``tether approve``. :mod:`.views` computes what a page shows (pure); :mod:`.pages`, :mod:`.live`
and :mod:`.inbox` serve the pages, the live streams and the approval inbox (over :mod:`.web`, what they
share); :mod:`.drivers` resumes runs; :mod:`.access` decides who may use it; :mod:`.app` assembles the
routes behind that guard and :mod:`.server` runs them.
"""
