"""An independent, test-only decoder of smdebug's raw tensor records (TFRecord framing + Event /
Summary / TensorProto wire format), used to build reference answers where Vigil deliberately differs
from smdebug (int8 read as int8, int16 decoded), and a reader of the index files as they lie on disk.
Written from the format spec, not from Vigil."""
import glob
import json
import os
import struct

import numpy as np

# TF DataType -> numpy dtype (what a correct reader returns).
DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8, 9: np.int64,
          10: np.bool_, 17: np.uint16, 19: np.float16, 22: np.uint32, 23: np.uint64}
DT_INT8 = 6
DT_INT16 = 5


def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf):
    """(field number, wire type, value) for each field of a protobuf message."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v = buf[i:i + 8]
            i += 8
        elif wt == 2:
            n, i = _varint(buf, i)
            v = buf[i:i + n]
            i += n
        elif wt == 5:
            v = buf[i:i + 4]
            i += 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        yield num, wt, v


class RawTensor:
    def __init__(self):
        self.data_type = 0
        self.shape = []
        self.content = b""
        self.strings = []
        self.int_val = []

    def array(self):
        """The value as a correct reader decodes it (None when this decoder does not know the type)."""
        dt = DTYPES.get(self.data_type)
        if dt is None:
            return None
        if self.content:
            a = np.frombuffer(self.content, dtype=np.dtype(dt).newbyteorder("<"))
        else:
            a = np.array(self.int_val, dtype=np.int64).astype(dt)
        return a.reshape(self.shape)


def _tensor_proto(buf):
    t = RawTensor()
    for num, wt, v in _fields(buf):
        if num == 1 and wt == 0:
            t.data_type = v
        elif num == 2 and wt == 2:
            for dnum, dwt, dv in _fields(v):
                if dnum == 2 and dwt == 2:
                    size = 0
                    for snum, swt, sv in _fields(dv):
                        if snum == 1 and swt == 0:
                            size = sv - (1 << 64) if sv >= (1 << 63) else sv
                    t.shape.append(size)
        elif num == 4 and wt == 2:
            t.content = bytes(v)
        elif num == 8 and wt == 2:
            t.strings.append(bytes(v))
        elif num == 7:
            if wt == 2:
                j = 0
                while j < len(v):
                    x, j = _varint(v, j)
                    t.int_val.append(x - (1 << 64) if x >= (1 << 63) else x)
            else:
                t.int_val.append(v)
    return t


def read_raw_tensor(trial_dir, tensor, step, worker):
    """The raw record of `tensor` at global `step` for `worker`, or None when the index has none."""
    index = os.path.join(trial_dir, "index", "%09d" % (step // 1000), "%012d_%s.json" % (step, worker))
    if not os.path.exists(index):
        return None
    with open(index) as f:
        idx = json.load(f)
    entry = next((p for p in idx.get("tensor_payload", []) if p["tensorname"] == tensor), None)
    if entry is None:
        return None
    with open(os.path.join(trial_dir, idx["meta"]["event_file_name"]), "rb") as f:
        f.seek(entry["start_idx"])
        record = f.read(entry["length"])
    (length,) = struct.unpack("<Q", record[:8])
    event = record[12:12 + length]
    for num, wt, v in _fields(event):
        if num == 5 and wt == 2:  # Event.summary
            for snum, swt, sv in _fields(v):
                if snum == 1 and swt == 2:  # Summary.value
                    for vnum, vwt, vv in _fields(sv):
                        if vnum == 8 and vwt == 2:  # Summary.Value.tensor
                            return _tensor_proto(vv)
    return None


def index_files(trial_dir):
    """Each index file of a trial: {path inside the trial: (meta, tensor names in order, shape names in
    order)}. Asserts that the records lie in their event file in the index's order."""
    files = {}
    for path in sorted(glob.glob(os.path.join(trial_dir, "index", "*", "*.json"))):
        with open(path) as f:
            doc = json.load(f)
        tensors = doc.get("tensor_payload", [])
        starts = [t["start_idx"] for t in tensors]
        assert starts == sorted(set(starts)), "%s: records out of the index's order: %s" % (path, starts)
        files[os.path.relpath(path, trial_dir)] = (doc["meta"], [t["tensorname"] for t in tensors],
                                                   [t["tensorname"] for t in doc.get("shape_payload", [])])
    return files
