"""Prints N (default 1) free TCP ports on 127.0.0.1, on one line: tests/ports.py [N].

The suites start their services (sshd, Prometheus, salt-master) on ports the kernel just handed
out; each socket stays bound until every port is chosen, so the N differ.
"""

import socket
import sys


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    socks = [socket.socket() for _ in range(count)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    print(*[s.getsockname()[1] for s in socks])
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
