"""The command ``tether hook install`` writes: ``<python> -I -S <this file> AGENT [options]``.

A hook runs before every tool call, so its start-up is the agent's wait. The ``tether`` console script pays
for ``site`` (every ``.pth`` file), the entry-point wrapper and the CLI; this file pays for none of them:
``-I -S`` starts a bare interpreter (no site-packages, no ``PYTHON*`` variables, no user site), and the
directory holding the ``tether`` package is put on the path after the standard library. The call then goes
to :func:`tether.hooks.entry.main`, which asks the daemon (standard library only) and, when no daemon answers,
loads ``site`` before it imports the deciding code (:func:`tether.hooks.entry.full_path`). Fail closed: a
launcher that cannot even import tether exits 2.
"""

import os
import sys

if __name__ == "__main__":
    try:
        sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        from tether.hooks.entry import main

        code = main(sys.argv[1:])
    except BaseException as e:  # never exit 1, which the agent reads as "no objection"
        sys.stderr.write(f"tether refused (fail closed): the hook launcher failed: {type(e).__name__}: {e}\n")
        code = 2
    sys.exit(code)
