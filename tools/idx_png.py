#!/usr/bin/env python3
"""Image INDEX of an idx image file (MNIST / Fashion-MNIST layout, gzip'ed or
plain) as an 8-bit grey PNG, with the standard library only:

    python3 tools/idx_png.py t10k-images-idx3-ubyte.gz INDEX OUT.png
"""
import gzip
import struct
import sys
import zlib


def main():
    path, index, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        magic, n, h, w = struct.unpack(">IIII", f.read(16))
        if magic != 0x803:
            sys.exit("%s: not an idx image file (magic %#x)" % (path, magic))
        if not 0 <= index < n:
            sys.exit("%s: image %d of %d" % (path, index, n))
        f.read(index * h * w)
        pixels = f.read(h * w)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\0" + pixels[y * w:(y + 1) * w] for y in range(h))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
           chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    with open(out, "wb") as f:
        f.write(png)


if __name__ == "__main__":
    main()
