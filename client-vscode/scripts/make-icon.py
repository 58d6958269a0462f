"""Draws the extension's listing icon, media/icon.png (128x128 RGBA): a speech bubble holding a π, on the
gallery banner's colour. Standard library only (a PNG is zlib-compressed rows plus CRC'd chunks); shapes are
drawn 4x larger and averaged down for smooth edges. Run `python3 scripts/make-icon.py` after changing it.
"""

from __future__ import annotations

import struct
import sys
import zlib
from pathlib import Path

SIZE, SCALE = 128, 4
BACKGROUND = (0x1E, 0x2A, 0x38)   # package.json galleryBanner.color
BUBBLE = (0x3F, 0xB6, 0xA8)
GLYPH = (0xFF, 0xFF, 0xFF)


def rounded_rect(x: float, y: float, left: float, top: float, right: float, bottom: float, radius: float) -> bool:
    if not (left <= x <= right and top <= y <= bottom):
        return False
    cx = min(max(x, left + radius), right - radius)
    cy = min(max(y, top + radius), bottom - radius)
    return (x - cx) ** 2 + (y - cy) ** 2 <= radius ** 2


def triangle(x: float, y: float, a: tuple[float, float], b: tuple[float, float], c: tuple[float, float]) -> bool:
    def side(p: tuple[float, float], q: tuple[float, float]) -> float:
        return (x - q[0]) * (p[1] - q[1]) - (p[0] - q[0]) * (y - q[1])
    d1, d2, d3 = side(a, b), side(b, c), side(c, a)
    return not ((d1 < 0 or d2 < 0 or d3 < 0) and (d1 > 0 or d2 > 0 or d3 > 0))


def colour_at(x: float, y: float) -> tuple[int, int, int, int]:
    """The colour of one point, in icon units (0..128)."""
    if not rounded_rect(x, y, 0, 0, 128, 128, 24):
        return (0, 0, 0, 0)
    # π: a bar on top and two legs, the right one curling out at the foot
    if (rounded_rect(x, y, 38, 38, 90, 48, 5)
            or rounded_rect(x, y, 48, 40, 58, 82, 5)
            or rounded_rect(x, y, 70, 40, 80, 78, 5)
            or rounded_rect(x, y, 70, 72, 88, 82, 5)):
        return (*GLYPH, 255)
    if rounded_rect(x, y, 20, 20, 108, 96, 18) or triangle(x, y, (34, 90), (58, 90), (30, 112)):
        return (*BUBBLE, 255)
    return (*BACKGROUND, 255)


def pixels() -> list[bytes]:
    rows = []
    samples = SCALE * SCALE
    for py in range(SIZE):
        row = bytearray()
        for px in range(SIZE):
            total = [0, 0, 0, 0]
            for sy in range(SCALE):
                for sx in range(SCALE):
                    r, g, b, a = colour_at(px + (sx + 0.5) / SCALE, py + (sy + 0.5) / SCALE)
                    total[0] += r * a
                    total[1] += g * a
                    total[2] += b * a
                    total[3] += a
            alpha = total[3]
            colour = [round(c / alpha) if alpha else 0 for c in total[:3]]
            row += bytes([*colour, round(alpha / samples)])
        rows.append(bytes(row))
    return rows


def png(rows: list[bytes]) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)   # 8-bit RGBA, no interlace
    raw = b"".join(b"\x00" + row for row in rows)                 # filter type 0 on every row
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def main() -> int:
    target = Path(__file__).resolve().parent.parent / "media" / "icon.png"
    target.write_bytes(png(pixels()))
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
