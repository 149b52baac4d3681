"""The command ``tether hook install`` writes where there is no bash: ``<python> -I -S <this file> AGENT [options]``.

A hook runs before every tool call, so its start-up is the agent's wait. ``-I -S`` starts a bare interpreter
(no ``site`` and its ``.pth`` files, no ``PYTHON*`` variables, no user site). This file is compiled at every
call (a script has no cached bytecode), so it only loads :mod:`tether.hooks.relay` beside it by path, from that
module's cached bytecode, without importing tether: the relay reads stdin, asks the daemon, prints its reply
and ends the process. Whatever the relay cannot vouch for goes, with the input it read, to
:func:`tether.hooks.entry.main` (the cyclic collector paused from before that import: ``collecting``), which loads
``site`` before it decides in-process; once it has answered,
:func:`tether.hooks.entry.finish` ends the process at once (``os._exit``, what a normal exit does that anyone sees
done first). Fail closed: a launcher that cannot load the relay or import tether exits 2.
"""

import sys

if __name__ == "__main__":
    answered = False  # main returned: tether.hooks.entry.finish ends the process at once
    try:
        from _frozen_importlib_external import SourceFileLoader  # loaded at start-up: the import system itself

        relay = type(sys)("tether.hooks.relay")
        relay.__file__ = (__file__[: __file__.rfind("/") + 1] or "./") + "relay.py"
        SourceFileLoader(relay.__name__, relay.__file__).exec_module(relay)
        raw = relay.launch(sys.argv[1:])  # returns only when the daemon did not answer
        import gc
        import os

        collecting = gc.isenabled()  # paused from here until the deciding code is imported and frozen (entry.py)
        gc.disable()
        sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        from tether.hooks.entry import finish, main

        code = main(sys.argv[1:], raw, own_process=True, collecting=collecting)
        answered = True
    except BaseException as e:  # never exit 1, which the agent reads as "no objection"
        sys.stderr.write(f"tether refused (fail closed): the hook launcher failed: {type(e).__name__}: {e}\n")
        code = 2
    if answered:
        finish(code)
    sys.exit(code)
