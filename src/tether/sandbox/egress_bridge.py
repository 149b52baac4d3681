"""The bridge inside the sandbox: ``127.0.0.1:PORT`` of the sandbox's loopback -> the host proxy's Unix socket.

Run by the sandbox's start-up shell as ``python -I -S -c <this file's text> SOCKET PORT`` before the
command: no site-packages, no tether import, and only the interpreter's built-in C modules (``_socket``,
``_thread``), because importing ``socket`` and ``threading`` costs more than the rest of the bridge's
start on a busy machine, and every command with a listed host pays it. It binds and listens, then forks;
the parent exits 0, so the command starts only once the port accepts connections, and a bridge that
cannot listen fails the sandbox's start (the command never runs without its proxy). The child copies
bytes both ways, one thread per direction, until either side closes. It needs no clean-up: it dies with
the sandbox's pid namespace when the command ends.
"""

import _socket
import _thread
import os
import sys

CHUNK = 65536


def pump(src: _socket.socket, dst: _socket.socket) -> None:
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    try:  # noqa: SIM105  (contextlib is one more import for every command's start)
        dst.shutdown(_socket.SHUT_WR)
    except OSError:
        pass


def serve(fd: int, path: str) -> None:
    conn = _socket.socket(fileno=fd)
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        conn.close()
        upstream.close()
        return
    done = _thread.allocate_lock()
    done.acquire()

    def back() -> None:
        pump(upstream, conn)
        done.release()

    _thread.start_new_thread(back, ())
    pump(conn, upstream)
    done.acquire()  # both directions finished
    conn.close()
    upstream.close()


def main() -> None:
    path, port = sys.argv[1], int(sys.argv[2])
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    while True:
        fd, _ = listener._accept()  # type: ignore[attr-defined]  # the C socket's accept: a file descriptor
        _thread.start_new_thread(serve, (fd, path))


if __name__ == "__main__":
    main()
