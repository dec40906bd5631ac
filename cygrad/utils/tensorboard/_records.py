"""TensorBoard's event-file format, written by hand (no TensorFlow, no
protobuf package): the few protocol-buffer messages a summary writer emits,
the TFRecord framing with masked CRC-32C checksums, and PNG encoding for
images.

Message layouts (field number, wire type) follow TensorBoard's
``event.proto`` and ``summary.proto``: ``Event{1 wall_time: double, 2 step:
int64, 3 file_version: string, 5 summary: Summary}``, ``Summary{1 value:
repeated Value}``, ``Value{1 tag, 2 simple_value: float, 4 image: Image,
5 histo: HistogramProto, 8 tensor: TensorProto, 9 metadata}``.
"""

import struct
import zlib

import numpy as np

# -- protocol-buffer wire format --------------------------------------------------


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1          # negative int64s take ten bytes, as protobuf's
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def f_varint(field, n):
    return _key(field, 0) + _varint(int(n))


def f_double(field, x):
    return _key(field, 1) + struct.pack("<d", float(x))


def f_float(field, x):
    return _key(field, 5) + struct.pack("<f", float(x))


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _key(field, 2) + _varint(len(data)) + data


def f_packed_doubles(field, values):
    return f_bytes(field, np.asarray(values, "<f8").tobytes())


# -- the messages -------------------------------------------------------------------


def event(wall_time, step=None, summary=None, file_version=None):
    out = f_double(1, wall_time)
    if step is not None:
        out += f_varint(2, step)
    if file_version is not None:
        out += f_bytes(3, file_version)
    if summary is not None:
        out += f_bytes(5, summary)
    return out


def summary(*values):
    return b"".join(f_bytes(1, v) for v in values)


def _plugin_metadata(name, content=b""):
    # SummaryMetadata{1 plugin_data: PluginData{1 plugin_name, 2 content}}
    return f_bytes(1, f_bytes(1, name) + (f_bytes(2, content) if content else b""))


def scalar_value(tag, x):
    return f_bytes(1, tag) + f_float(2, x)


def text_value(tag, text):
    # TensorProto{1 dtype (DT_STRING = 7), 2 tensor_shape{2 dim{1 size}},
    # 8 string_val}
    shape = f_bytes(2, f_bytes(2, f_varint(1, 1)))
    tensor = f_varint(1, 7) + shape + f_bytes(8, text)
    return f_bytes(1, tag) + f_bytes(9, _plugin_metadata("text")) + f_bytes(8, tensor)


def histogram_value(tag, lo, hi, num, total, total_sq, limits, counts):
    histo = (f_double(1, lo) + f_double(2, hi) + f_double(3, num) + f_double(4, total)
             + f_double(5, total_sq) + f_packed_doubles(6, limits)
             + f_packed_doubles(7, counts))
    return f_bytes(1, tag) + f_bytes(5, histo)


def image_value(tag, height, width, channels, png):
    image = (f_varint(1, height) + f_varint(2, width) + f_varint(3, channels)
             + f_bytes(4, png))
    return f_bytes(1, tag) + f_bytes(4, image)


# -- TFRecord framing -----------------------------------------------------------------


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data):
    """One TFRecord: length, its checksum, the data, the data's checksum."""
    head = struct.pack("<Q", len(data))
    return (head + struct.pack("<I", _masked(crc32c(head))) + data
            + struct.pack("<I", _masked(crc32c(data))))


# -- PNG ------------------------------------------------------------------------------


def png(pixels):
    """8-bit PNG of an (H, W, C) uint8 array, C in 1 (gray), 3 (RGB), 4 (RGBA)."""
    h, w, c = pixels.shape
    color = {1: 0, 3: 2, 4: 6}[c]
    rows = b"".join(b"\x00" + pixels[i].tobytes() for i in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b""))
