"""Exit 0 if and only if the ELF binary given asks for a program interpreter (a PT_INTERP program
header): it is dynamically linked. A static binary (musl, or static glibc as the ppc64le build)
needs no libc on the host. build-collection.sh runs it on each binary it ships."""

import struct
import sys

PT_INTERP = 3


def program_header_types(data):
    end = "<" if data[5] == 1 else ">"
    if data[4] == 2:  # 64-bit
        (phoff,) = struct.unpack_from(end + "Q", data, 0x20)
        phentsize, phnum = struct.unpack_from(end + "HH", data, 0x36)
    else:
        (phoff,) = struct.unpack_from(end + "I", data, 0x1C)
        phentsize, phnum = struct.unpack_from(end + "HH", data, 0x2A)
    return [struct.unpack_from(end + "I", data, phoff + i * phentsize)[0] for i in range(phnum)]


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as f:
        sys.exit(0 if PT_INTERP in program_header_types(f.read()) else 1)
