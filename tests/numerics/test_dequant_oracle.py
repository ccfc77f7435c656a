"""stet's dequantization (numerics/dequant.cc) against an independent oracle:
gguf-py's gguf.quants.dequantize (numpy), on every block layout stet reads.

Random bytes are valid blocks for every type once the f16 scale fields are made
finite (their quants, packed scales and high bits may take any value), so each
type gets thousands of random blocks plus a few crafted ones (all-zero and
all-ones quant bytes, extreme finite scales, subnormal scales), and every
dequantized float must equal gguf-py's bit for bit. Blocks with inf/nan scales
must not crash and must give the same non-finite pattern.

Also: stet's quantizers for the types gguf-py implements bit-exactly after ggml's
quantize_row_*_ref (q4_0, q4_1, q5_0, q5_1, q8_0) must write the same bytes.

Needs numpy and gguf (scripts/setup installs them): skips (77) outside CI when
they are missing, fails in CI (CI=true).
"""
import os
import subprocess
import sys
import unittest

SKIP = 77


def require(ok, what):
    if ok:
        return
    if os.environ.get("CI") == "true":
        print(f"FAIL: required test material missing: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: test material not present: {what}", file=sys.stderr)
    sys.exit(SKIP)


try:
    import numpy as np
    import gguf
    from gguf import GGMLQuantizationType as Q
except ImportError:
    require(False, "the Python packages numpy and gguf (scripts/setup installs them)")

TOOL = os.environ.get("STET_QUANT_TOOL", "")
require(TOOL and os.path.exists(TOOL), "stet_quant_tool (set STET_QUANT_TOOL)")



def stet_block_types():
    """stet's own type table (numerics/dtype.cc), through the tool: name -> (gguf
    type, elements per block, bytes per block, byte offsets of the f16 fields). A
    new row is checked here by construction, under gguf-py's name for it."""
    p = subprocess.run([TOOL, "types"], capture_output=True, timeout=60, check=True)
    out = {}
    for line in p.stdout.decode().splitlines():
        name, elems, size, *offs = line.split()
        out[name] = (Q[name.upper()], int(elems), int(size), [int(o) for o in offs])
    return out


BLOCK_TYPES = stet_block_types()

N_RANDOM_BLOCKS = 4096


def stet(mode, type_name, n, data):
    p = subprocess.run([TOOL, mode, type_name, str(n)], input=data, capture_output=True,
                       timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"stet_quant_tool {mode} {type_name} {n}: {p.stderr.decode()}")
    return p.stdout


def finite_f16(bits):
    """Maps any f16 bit pattern to a finite one (inf/nan -> exponent 0x0f, same sign
    and mantissa), keeping zeros, subnormals and the full finite range."""
    bits = bits.astype(np.uint16)
    special = (bits & 0x7C00) == 0x7C00
    return np.where(special, bits & np.uint16(0xBFFF), bits).astype(np.uint16)


def set_f16(blocks, offsets, values):
    """blocks: uint8 [nb, bytes]; values: uint16 [nb, len(offsets)]."""
    for j, off in enumerate(offsets):
        blocks[:, off] = (values[:, j] & 0xFF).astype(np.uint8)
        blocks[:, off + 1] = (values[:, j] >> 8).astype(np.uint8)


def random_blocks(rng, name, nb):
    _, _, size, offs = BLOCK_TYPES[name]
    blocks = rng.integers(0, 256, size=(nb, size), dtype=np.uint8)
    f16 = finite_f16(rng.integers(0, 1 << 16, size=(nb, len(offs)), dtype=np.uint32))
    set_f16(blocks, offs, f16)
    return blocks


def crafted_blocks(name):
    """All-0x00 and all-0xFF payloads with scales 1, -1, the largest finite f16,
    the smallest subnormal, and zero."""
    _, _, size, offs = BLOCK_TYPES[name]
    scales = [0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x0000, 0x8000, 0x3555]
    out = []
    for fill in (0x00, 0xFF, 0x55, 0xAA):
        for s in scales:
            b = np.full((1, size), fill, dtype=np.uint8)
            set_f16(b, offs, np.array([[s] * len(offs)], dtype=np.uint16))
            out.append(b)
    return np.concatenate(out)


def dequant_both(name, blocks):
    qtype, elems, size, _ = BLOCK_TYPES[name]
    nb = blocks.shape[0]
    got = np.frombuffer(stet("dequantize", name, nb * elems, blocks.tobytes()), dtype=np.float32)
    want = gguf.quants.dequantize(blocks.reshape(1, nb * size), qtype).reshape(-1)
    return got, want.astype(np.float32, copy=False)


def first_diff(got, want):
    g, w = got.view(np.uint32), want.view(np.uint32)
    idx = np.nonzero(g != w)[0]
    return None if idx.size == 0 else int(idx[0])


class DequantOracle(unittest.TestCase):
    def check_bitwise(self, name, blocks):
        elems = BLOCK_TYPES[name][1]
        got, want = dequant_both(name, blocks)
        self.assertEqual(got.shape, want.shape)
        i = first_diff(got, want)
        if i is not None:
            blk = i // elems
            self.fail(f"{name}: element {i} (block {blk}, offset {i % elems}): stet {got[i]!r} "
                      f"({got.view(np.uint32)[i]:#010x}) != gguf {want[i]!r} "
                      f"({want.view(np.uint32)[i]:#010x}); block bytes "
                      f"{blocks[blk].tobytes().hex()}")
        return got

    def test_the_table_is_read_and_agrees_with_gguf(self):
        # The types come from stet's table; gguf-py must agree on every block's size
        # (a wrong row would fail every comparison below less clearly).
        self.assertIn("q4_k", BLOCK_TYPES)
        self.assertGreaterEqual(len(BLOCK_TYPES), 12)
        for name, (qtype, elems, size, offs) in BLOCK_TYPES.items():
            self.assertEqual(gguf.constants.GGML_QUANT_SIZES[qtype], (elems, size), name)
            self.assertTrue(offs, name)

    def test_every_block_layout_random_blocks(self):
        for name in BLOCK_TYPES:
            with self.subTest(type=name):
                rng = np.random.default_rng(sum(map(ord, name)) * 7919)
                got = self.check_bitwise(name, random_blocks(rng, name, N_RANDOM_BLOCKS))
                # The comparison is not vacuous: the values are finite and spread.
                self.assertTrue(np.all(np.isfinite(got)), name)
                self.assertGreater(len(np.unique(got)), N_RANDOM_BLOCKS, name)

    def test_every_block_layout_crafted_blocks(self):
        for name in BLOCK_TYPES:
            with self.subTest(type=name):
                self.check_bitwise(name, crafted_blocks(name))

    def test_plain_types(self):
        rng = np.random.default_rng(11)
        n = 1 << 14
        h = finite_f16(rng.integers(0, 1 << 16, size=n, dtype=np.uint32))
        got = np.frombuffer(stet("dequantize", "f16", n, h.tobytes()), dtype=np.float32)
        want = gguf.quants.dequantize(h.view(np.uint8).reshape(1, -1), Q.F16).reshape(-1)
        self.assertIsNone(first_diff(got, want.astype(np.float32)))
        bf = rng.integers(0, 1 << 16, size=n, dtype=np.uint32).astype(np.uint16)  # nan included
        got = np.frombuffer(stet("dequantize", "bf16", n, bf.tobytes()), dtype=np.float32)
        want = gguf.quants.dequantize(bf.view(np.uint8).reshape(1, -1), Q.BF16).reshape(-1)
        self.assertIsNone(first_diff(got, want))

    def test_non_finite_scales_do_not_crash(self):
        # inf / nan scales are the model's problem: dequantization must still finish and
        # agree with the oracle on which outputs are nan / inf.
        rng = np.random.default_rng(5)
        for name, (_, _, _, offs) in BLOCK_TYPES.items():
            with self.subTest(type=name):
                blocks = random_blocks(rng, name, 64)
                special = np.array([0x7C00, 0xFC00, 0x7E00, 0x7C01], dtype=np.uint16)
                vals = special[rng.integers(0, 4, size=(64, len(offs)))]
                set_f16(blocks, offs, vals)
                with np.errstate(invalid="ignore", over="ignore"):
                    got, want = dequant_both(name, blocks)
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
                finite = ~np.isnan(want)
                np.testing.assert_array_equal(got[finite], want[finite])


class QuantizeOracle(unittest.TestCase):
    """The types whose gguf-py quantizer reproduces ggml's quantize_row_*_ref."""

    def rows(self):
        rng = np.random.default_rng(3)
        n = 32 * 512
        rows = [rng.standard_normal(n), 0.02 * rng.standard_normal(n),
                rng.standard_normal(n) ** 3 * 10, np.abs(rng.standard_normal(n)) + 3,
                np.zeros(n), np.full(n, 0.75), 1e-6 * rng.standard_normal(n),
                (np.arange(n) % 7) - 3.0,  # exact ties
                np.where(np.arange(n) % 97 == 5, 300.0, 0.01 * rng.standard_normal(n))]
        return [r.astype(np.float32) for r in rows]

    def test_simple_types_write_ggml_bytes(self):
        for name in ("q8_0", "q4_0", "q4_1", "q5_0", "q5_1"):
            qtype = BLOCK_TYPES[name][0]
            for i, x in enumerate(self.rows()):
                with self.subTest(type=name, row=i):
                    got = stet("quantize", name, x.size, x.tobytes())
                    want = gguf.quants.quantize(x.reshape(1, -1), qtype).tobytes()
                    self.assertEqual(len(got), len(want))
                    if got != want:
                        j = next(k for k in range(len(got)) if got[k] != want[k])
                        self.fail(f"{name} row {i}: first differing byte {j} "
                                  f"(block {j // BLOCK_TYPES[name][2]})")


if __name__ == "__main__":
    unittest.main()
