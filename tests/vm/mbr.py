"""Writes an MBR partition table into a disk image for the VM suite (tests/vm/run.sh): N primary
partitions of type 0xfd (Linux raid autodetect) of equal size, from 1 MiB to the end, each a whole
number of MiB; the disk signature is "mdtu".

    python3 tests/vm/mbr.py IMAGE N SIZE_MIB
"""

import struct
import sys

SECTOR = 512
START = 2048  # 1 MiB, in sectors


def entry(start, count):
    """One partition entry: not bootable, no CHS address, type 0xfd, LBA start and length."""
    return struct.pack("<B3sB3sII", 0, b"\0\0\0", 0xFD, b"\0\0\0", start, count)


def table(n, size_mib):
    sectors = size_mib * 1024 * 1024 // SECTOR
    size = (sectors - START) // n // 2048 * 2048
    return b"".join(entry(START + i * size, size) for i in range(n)) + bytes(16 * (4 - n))


def write(path, n, size_mib):
    with open(path, "r+b") as f:
        f.seek(440)
        f.write(struct.pack("<I", 0x6D647475) + b"\0\0" + table(n, size_mib) + b"\x55\xaa")


if __name__ == "__main__":
    write(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
