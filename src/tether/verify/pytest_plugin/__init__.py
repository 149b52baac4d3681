"""tether's pytest reporter lives here, alone, so that tether can put this directory (and nothing of the
workspace) on the sandboxed test run's ``PYTHONPATH`` and load it with ``-p tether_report``."""
