#!/usr/bin/python3
"""Writes the seed corpora of the fuzz harnesses (fuzz/*.cpp) from the shared fixtures.

    make_seeds.py FIXTURES_DIR EXAMPLE_JOBS_DIR CORPUS_DIR

Seeds are made at run time and never committed. Each seed is named by the SHA-1 of its bytes (as
libFuzzer names the inputs it adds), so running this again writes nothing new.
"""
import hashlib
import json
import pathlib
import struct
import sys

_CRC32C_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def masked_crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC32C_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def frame(payload, real_footer=False, length=None):
    """One TFRecord; `length` overrides the length field (for seeds with lying lengths)."""
    header = struct.pack("<Q", len(payload) if length is None else length)
    footer = masked_crc32c(payload) if real_footer else 0x062DC0B3  # smdebug's constant footer
    return header + struct.pack("<I", masked_crc32c(header)) + payload + struct.pack("<I", footer)


def split_records(data):
    out, offset = [], 0
    while offset + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        if offset + 16 + length > len(data):
            break
        out.append(data[offset + 12:offset + 12 + length])
        offset += 16 + length
    return out


class Corpus:
    def __init__(self, root, target):
        self.dir = pathlib.Path(root) / target
        self.dir.mkdir(parents=True, exist_ok=True)
        self.count = 0

    def add(self, data):
        if isinstance(data, str):
            data = data.encode()
        path = self.dir / hashlib.sha1(data).hexdigest()
        if not path.exists():
            path.write_bytes(data)
        self.count += 1


def job_seeds(example_jobs):
    for path in sorted(pathlib.Path(example_jobs).glob("*.json")):
        yield path.read_bytes()
    rule = {"RuleConfigurationName": "LossNotDecreasing",
            "RuleParameters": {"rule_to_invoke": "LossNotDecreasing", "num_steps": "10"}}
    yield json.dumps([rule])
    yield json.dumps({"DebugRuleConfigurations": [{
        "RuleConfigurationName": "Multi",
        "RuleEvaluatorImage": "image",
        "RuleParameters": {"rule_to_invoke": "SimilarAcrossRuns", "base_trial": "/a", "other_trial_0": "/b",
                           "other_trial_1": "/c", "start_step": "5", "end_step": "50",
                           "action_json": "{\"name\": \"StopTraining\"}", "source_s3_uri": "s3://bucket/rule.py"}}]})
    yield json.dumps({"DebugRuleConfigurations": [
        {"RuleConfigurationName": "A", "RuleParameters": {"rule_to_invoke": "VanishingGradient",
                                                          "other_trials": "/x,/y", "threshold": "1e-7"}},
        {"RuleConfigurationName": "B", "RuleParameters": {"rule_to_invoke": "ExplodingTensor"}}],
        "ResourceConfig": {"InstanceCount": 2, "InstanceType": "ml.p3.2xlarge"},
        "HyperParameters": {"sagemaker_mpi_enabled": "true"},
        "CheckpointConfig": {"S3Uri": "s3://bucket/checkpoints"},
        "Distribution": {"smdistributed": {"dataparallel": {"enabled": True}}}})
    yield json.dumps({"DebugRuleConfigurations": [{"RuleConfigurationName": "Overfit",
                                                   "RuleParameters": {"rule_to_invoke": "Overfit"}}],
                      "Distribution": {"parameter_server": {"enabled": False}, "mpi": {"enabled": False}},
                      "HyperParameters": {"mp_parameters": "{}"}})
    yield "[]"
    yield "{}"


# The param_values harness: byte 0 even = one value for the spec picked by byte 1 (an index into
# its 12 specs); odd = "name=value" lines for the whole rule (bit 1: extra parameters allowed).
SPEC_VALUES = [
    ["50", "0", "100", "101", "-1", " 7 "],
    ["9223372036854775807", "-9223372036854775808", "12"],
    ["1", "0"],
    ["-10", "10", "3"],
    ["0.5", "1e-3", "1.0000001", "nan", "inf"],
    ["1e6", "-1e308", "0x1p3"],
    ["1e-7", "-0.0", "1e400"],
    ["True", "false", "1", "0", "yes"],
    ["any text", ""],
    ["a,b,,c", " x , y ", ","],
    [".*relu.*", "(a|b)+", "[", "a{2,3}", "(?:x)*"],
    ["mean", "MIN", "l2_norm", "median"],
]


def param_seeds():
    for spec_index, values in enumerate(SPEC_VALUES):
        for value in values:
            yield bytes([0, spec_index]) + value.encode()
    yield b"\x01required_small_int=3\npercent=20\nnames=a,b\nreduction=max"
    yield b"\x01percent=20"
    yield b"\x03required_small_int=-2\nsomething_else=1\npattern=^conv"
    yield b"\x01required_small_int=1\nflag=true\nunit_interval=0.25\nany_int=-5\nlabel=x=y"


def shard_layout_seeds():
    """Layouts as the PyTorch hook writes them (FSDP2's Shard(0), tensor parallelism's Shard(1) and
    Replicate), old ones without the shard's shape, and a layout whose tensors are one tensor's shards."""
    def layout(tensors):
        return json.dumps({"version": 1, "worker": "worker_1", "tensors": tensors}).encode()
    yield layout({"Sequential_0.weight": {"global_shape": [8, 4], "offsets": [4, 0], "shape": [4, 4]},
                  "gradient/Sequential_2.bias": {"global_shape": [2], "offsets": [1], "shape": [1]}})
    yield layout({"Sequential_2.weight": {"global_shape": [2, 8], "offsets": [0, 4], "shape": [2, 4]},
                  "Sequential_2.bias": {"global_shape": [2], "offsets": [0], "shape": [2]}})
    yield layout({"Sequential_0.weight": {"global_shape": [8, 4], "offsets": [4, 0]}})
    yield layout({"a": {"global_shape": [3, 2], "offsets": [0, 0], "shape": [2, 2]},
                  "b": {"global_shape": [3, 2], "offsets": [2, 0], "shape": [1, 2]},
                  "c": {"global_shape": [3, 2], "offsets": [2, 0], "shape": [1, 2]}})


def s3_listing_seeds():
    """ListObjectsV2 pages as S3 sends them: a last page, a truncated one with its token, escaped
    keys and ETags (&quot;, &amp;, &#x..;), an empty listing and one cut short."""
    def page(contents, truncated=False, token=None):
        xml = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
               "<Name>trials</Name><Prefix>job/</Prefix><KeyCount>%d</KeyCount><MaxKeys>1000</MaxKeys>"
               "<IsTruncated>%s</IsTruncated>" % (len(contents), "true" if truncated else "false"))
        for key, size in contents:
            xml += ("<Contents><Key>%s</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
                    "<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>%d</Size>"
                    "<StorageClass>STANDARD</StorageClass></Contents>" % (key, size))
        if token:
            xml += "<NextContinuationToken>%s</NextContinuationToken>" % token
        return (xml + "</ListBucketResult>").encode()
    yield page([("job/index/000000000/000000000001_worker_0.json", 412), ("job/training_job_end.ts", 0)])
    yield page([("job/events/000000000000/000000000000_worker_0.tfevents", 9031)], True, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J")
    yield page([("job/k2 &amp;&lt;x&gt; &#x1F600;&#233;", 3)])
    yield page([])
    yield page([("job/a", 1)])[:150]
def control_protocol_seeds():
    """Client byte streams of the job's control socket; the first byte picks the reads' size."""
    def f(kind, payload):
        return kind + struct.pack(">I", len(payload)) + payload
    request = json.dumps({"ProtocolVersion": 1, "Action": "StartSession", "Target": "job_algo-1",
                          "Term": "xterm", "TerminalSize": {"Rows": 24, "Cols": 80}}).encode()
    yield b"\x00" + f(b"Q", b'{"ProtocolVersion": 1, "Action": "StopTrainingJob"}')
    yield b"\x03" + f(b"Q", request) + f(b"W", struct.pack(">HH", 40, 120)) + f(b"I", b"ls\n") + f(b"I", b"")
    yield b"\x01" + f(b"C", b"") + f(b"X", struct.pack(">i", 130)) + f(b"O", b"out")
    yield b"\x00" + b"Q" + struct.pack(">I", 65537)  # over the limit
    yield b"\x05" + f(b"Q", b"{") + b"Z"  # bad JSON, then a byte that is no frame type


def main():
    fixtures, example_jobs, corpus_root = sys.argv[1:4]
    fixtures = pathlib.Path(fixtures)
    corpora = {name: Corpus(corpus_root, name) for name in (
        "tfrecord_fuzzer", "event_proto_fuzzer", "index_json_fuzzer", "collections_json_fuzzer",
        "job_config_fuzzer", "param_values_fuzzer", "shard_layout_fuzzer", "elf_search_path_fuzzer",
        "s3_listing_fuzzer", "control_protocol_fuzzer")}

    files_per_trial = {}
    for path in sorted(fixtures.rglob("*.tfevents")):
        data = path.read_bytes()
        corpora["tfrecord_fuzzer"].add(data)
        # Record payloads of the first few event files of each trial (trial/events/STEP/FILE): all of
        # them would be some 15,000 near-duplicates that slow the start of a short run.
        trial = path.parent.parent.parent
        files_per_trial[trial] = files_per_trial.get(trial, 0) + 1
        if files_per_trial[trial] <= 4:
            for payload in split_records(data):
                corpora["event_proto_fuzzer"].add(payload)
    # Framing the fixtures never show: a real payload CRC, an empty file, a truncated record, and a
    # length field of 2**60 (with a valid length CRC) that must be refused without allocating.
    sample = b"\x09\x00\x00\x00\x00\x00\x00\xf0\x3f"
    for data in (frame(sample, real_footer=True), b"", frame(sample)[:-3], frame(sample, length=1 << 60)):
        corpora["tfrecord_fuzzer"].add(data)
    for path in sorted(fixtures.rglob("index/*/*.json")):
        corpora["index_json_fuzzer"].add(path.read_bytes())
    for path in sorted(fixtures.rglob("collections/*/*.json")):
        corpora["collections_json_fuzzer"].add(path.read_bytes())
    for data in job_seeds(example_jobs):
        corpora["job_config_fuzzer"].add(data)
    for data in param_seeds():
        corpora["param_values_fuzzer"].add(data)
    for data in shard_layout_seeds():
        corpora["shard_layout_fuzzer"].add(data)
    # Small shared objects of this machine (their dynamic sections, some with RUNPATH), cut to the
    # harness's size bound.
    libraries = [p for p in sorted(pathlib.Path("/usr/lib/x86_64-linux-gnu").glob("lib*.so*"))
                 if p.is_file() and not p.is_symlink() and p.stat().st_size <= 16384]
    for path in libraries[:40]:
        corpora["elf_search_path_fuzzer"].add(path.read_bytes())
    for data in s3_listing_seeds():
        corpora["s3_listing_fuzzer"].add(data)
    for data in control_protocol_seeds():
        corpora["control_protocol_fuzzer"].add(data)

    for name, corpus in corpora.items():
        if corpus.count == 0:
            sys.exit(f"make_seeds: no seeds for {name}: is {fixtures} the shared fixtures folder?")


if __name__ == "__main__":
    main()
