"""attncore.jit's AMX path (amx.py, flash_amx.py): precision="bf16" on tdpbf16ps tiles.

Where AMX cannot run, only the checks that it is not chosen run. Where it can, the tile
intrinsics are checked against NumPy, and the kernel against the NumPy bf16 reference of
test_jit_bf16 (the same bf16 products, sums in float64) on shapes that do not fill whole
tiles (d not a multiple of 32, d_v not of 16, keys not of 16 or 32), and against the
emulated bf16 path within float32 accumulation error. No wall-clock assertions.

Untested where AMX cannot run, as on CI's runners and a Zen 4: the five tests marked
needs_amx skip there (the tile product, the kernel against the reference, AMX against
emulated, broadcast entries, the vcvtne2ps2bf16 pairing). Intel's SDE (sde64 -spr) would
run them anywhere, but it is a download from intel.com, on no registry the project
installs from (PyPI, Debian, npm), so CI cannot have it. What runs everywhere: the route
(from the CPU's features, AMX or not) and the pack-once flags under threads racing for them."""
import warnings

import numpy as np
import pytest

pytest.importorskip("numba")

import numba  # noqa: E402

import attncore  # noqa: E402
from attncore import jit  # noqa: E402
from attncore.bfloat16 import round_to_bfloat16  # noqa: E402
from attncore.jit import amx, atomics, bf16, bf16_route  # noqa: E402
from attncore.jit.bf16 import _pack_pairs, _pack_rows, round_to_bf16  # noqa: E402

from .test_jit_bf16 import _mask, assert_below, assert_matches_bf16_reference, float64_bound, inputs  # noqa: E402

pytestmark = pytest.mark.xdist_group("numba-flash")  # one worker compiles each kernel once (conftest.py)

AMX = amx.available()
needs_amx = pytest.mark.skipif(not AMX, reason="no AMX here (CPU, Numba's features or the kernel's permission)")


def test_available_needs_the_features_and_never_raises(monkeypatch):
    assert isinstance(AMX, bool)
    monkeypatch.setattr(amx, "host_features", lambda: {"avx512f": True, "avx512bw": True, "avx512bf16": True})
    assert amx.available.__wrapped__() is False

    def broken():
        raise RuntimeError("no target")

    monkeypatch.setattr(amx, "host_features", broken)
    assert amx.available.__wrapped__() is False


def test_bf16_runs_on_amx_exactly_where_it_is_available(monkeypatch):
    monkeypatch.delenv(bf16_route.ENV_ROUTE, raising=False)
    assert (bf16_route.products("bf16", jit.PATHS["avx512"]) == "amx") == AMX
    assert bf16_route.products("bf16_emulated", jit.PATHS["avx512"]) == "emulated"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # emulated on avx2, and it says so
        assert bf16_route.products("bf16", jit.PATHS["avx2"]) == "emulated"


@pytest.mark.parametrize("amx_here", [False, True])
def test_the_route_follows_the_cpus_features_and_never_a_timing(monkeypatch, amx_here):
    """amx where AMX runs, else native where vdpbf16ps runs, else emulated; the probe is never
    asked (it raises here), so every process on a machine takes the same route."""
    def no_timing(shape):
        raise AssertionError("the route timed the products without being asked to")

    monkeypatch.delenv(bf16_route.ENV_ROUTE, raising=False)
    monkeypatch.setattr(bf16_route.amx, "available", lambda: amx_here)
    monkeypatch.setattr(bf16_route, "native_speedup", no_timing)
    wide = jit.PATHS["avx512"]
    native = bf16.native_available(wide)
    expected = ("amx" if amx_here else "native") if native else "emulated"
    assert bf16_route.route(wide) == expected
    info = jit.kernel_info(path="avx512")
    assert (info["bf16_products"], info["bf16_route_source"], info["bf16_native_speedup"]) == (
        expected, "cpu features", None)


@pytest.mark.parametrize("speedup", [0.55, 1.2, 1.25, 2.0])
def test_auto_takes_vdpbf16ps_only_where_it_measures_faster(monkeypatch, speedup):
    """ATTNCORE_JIT_BF16_ROUTE=auto (opt-in) times the products and reports the measurement."""
    monkeypatch.setenv(bf16_route.ENV_ROUTE, "auto")
    monkeypatch.setattr(bf16_route.amx, "available", lambda: False)
    monkeypatch.setattr(bf16_route, "native_speedup", lambda shape: speedup)
    native = bf16.native_available(jit.PATHS["avx512"])
    expected = "native" if native and speedup >= bf16_route.NATIVE_PAYS else "emulated"
    with warnings.catch_warnings():
        # emulated for want of vdpbf16ps says so; emulated because it is slower here is no warning
        warnings.simplefilter("error" if native else "ignore", RuntimeWarning)
        assert bf16_route.products("bf16", jit.PATHS["avx512"]) == expected
    info = jit.kernel_info(path="avx512")
    assert info["bf16_native_speedup"] == (speedup if native else None)
    assert info["bf16_route_source"] == (f"{bf16_route.ENV_ROUTE}=auto" if native else "cpu features")


@pytest.mark.parametrize("chosen", ["native", "emulated"])
def test_the_environment_variable_forces_a_route_where_vdpbf16ps_runs(monkeypatch, chosen):
    monkeypatch.setenv(bf16_route.ENV_ROUTE, chosen)
    wide = jit.PATHS["avx512"]
    assert bf16_route.route(wide) == (chosen if bf16.native_available(wide) else "emulated")
    monkeypatch.setenv(bf16_route.ENV_ROUTE, "fastest")
    with pytest.raises(ValueError, match=r"^ATTNCORE_JIT_BF16_ROUTE must be one of native, emulated, auto .*'fastest'"):
        bf16_route.route(wide) if bf16.native_available(wide) else bf16_route._chosen()


def test_tile_config_is_palette_1_with_eight_16_by_64_tiles():
    config = amx.tile_config()
    assert config.dtype == np.uint8 and config.size == 64 and config[0] == 1
    assert np.all(config[16:32].view(np.uint16) == 64) and np.all(config[48:56] == 16)
    assert not config[1:16].any() and not config[32:48].any() and not config[56:].any()


@numba.njit
def _one_product(config, a_w, b_w, c):
    amx._tile_configure(config)
    amx._tile_load(0, c, 0, 0)
    amx._tile_load(1, a_w, 0, 0)
    amx._tile_load(2, b_w, 0, 0)
    amx._tile_dot(0, 1, 2)
    amx._tile_store(0, c, 0, 0)
    amx._tile_zero(3)
    amx._tile_store(3, c, 16, 0)
    amx._tile_release()


@needs_amx
def test_a_tile_product_is_numpys_on_the_same_bf16_operands():
    rng = np.random.default_rng(0)
    a = round_to_bf16(rng.standard_normal((16, 32)).astype(np.float32))
    b = round_to_bf16(rng.standard_normal((32, 16)).astype(np.float32))
    a_w, b_w = np.zeros((16, 16), np.uint32), np.zeros((16, 16), np.uint32)
    _pack_rows(a, 0, 16, a_w)
    _pack_pairs(b, 32, b_w)
    c = np.ones((32, 16), np.float32)
    _one_product(amx.tile_config(), a_w, b_w, c)
    exact = 1 + a.astype(np.float64) @ b
    np.testing.assert_allclose(c[:16], exact, rtol=0, atol=32 * 2.0**-23 * (1 + np.abs(exact).max()))
    assert not c[16:].any()


@needs_amx
@pytest.mark.parametrize("causal", [False, True, "top_left", "bottom_right"])
@pytest.mark.parametrize("t_q, t_k, d, d_v, block_k", [
    (1, 1, 1, 1, 128), (17, 33, 7, 3, 128), (100, 257, 33, 17, 37), (150, 90, 64, 64, 16),
    (64, 300, 80, 100, 200), (49, 49, 130, 20, 128), (200, 140, 64, 64, 128),
])
def test_matches_the_bf16_reference_and_float64(causal, t_q, t_k, d, d_v, block_k):
    if causal is True:
        t_k = t_q
    q, k, v = inputs((2, t_q, d), (2, t_k, d), d_v, sigma=1.5, seed=t_q + d)
    out, _ = assert_matches_bf16_reference(q, k, v, causal, "avx512", "bf16", block_k=block_k)
    exact = attncore.attention(*(x.astype(np.float64) for x in (q, k, v)), mask=_mask(t_q, t_k, causal))
    assert_below(np.abs(out - exact), float64_bound(q, k, v, causal))


@needs_amx
@pytest.mark.parametrize("causal", [False, True])
def test_amx_and_emulated_agree_within_float32_error(causal):
    q, k, v = inputs((1, 2, 1100, 64), (1, 2, 1100, 64), 64, seed=7)
    on_tiles = jit.flash_attention(q, k, v, causal=causal, precision="bf16")
    emulated = jit.flash_attention(q, k, v, causal=causal, precision="bf16_emulated")
    assert np.abs(on_tiles - emulated).max() < 1e-3 * np.abs(v).max()
    assert not np.array_equal(on_tiles, jit.flash_attention(q, k, v, causal=causal))  # bf16 is not f32


@needs_amx
@pytest.mark.parametrize("causal", [False, True])
def test_broadcast_keys_and_values_read_the_tiles_of_their_own_entry(causal):
    """Each key tile is packed once per call into room per k (v) entry: with k shared by the
    batch and v by the heads, every query must read the tiles of the entry it broadcasts
    from, bit for bit what it gets when the broadcast copies are made first."""
    q, k, _ = inputs((2, 3, 700, 40), (1, 3, 700, 40), 24, seed=11)
    v = np.random.default_rng(12).standard_normal((2, 1, 700, 24)).astype(np.float32)  # one value head per entry
    shared = jit.flash_attention(q, k, v, causal=causal, precision="bf16", block_k=37)
    copied = jit.flash_attention(q, *(np.broadcast_to(x, (2, 3, 700, x.shape[-1])).copy() for x in (k, v)),
                                 causal=causal, precision="bf16", block_k=37)
    np.testing.assert_array_equal(shared, copied)
    emulated = jit.flash_attention(q, k, v, causal=causal, precision="bf16_emulated", block_k=37)
    assert np.abs(shared - emulated).max() < 1e-3 * np.abs(v).max()


def test_a_tile_is_packed_by_the_first_thread_that_claims_it():
    publish = numba.njit(lambda flags, i: atomics._publish(flags, i))
    flags = np.zeros(3, np.int64)
    assert atomics._packing(flags, 1)  # first claim: this thread packs
    assert flags.tolist() == [atomics.UNCLAIMED, atomics.WRITING, atomics.UNCLAIMED]
    publish(flags, 1)
    assert flags[1] == atomics.WRITTEN
    assert not atomics._packing(flags, 1)  # written: read it, do not pack again
    assert atomics._packing(flags, 2) and not atomics._packing(np.full(1, atomics.WRITTEN), 0)


RACE = """
import json, sys
import numba, numpy as np
from numba import prange
from attncore.jit import atomics

@numba.njit(parallel=True)
def race(flags, packed, counts, bad, waited):
    width = packed.shape[1]
    for t in prange(bad.size):  # every iteration visits every flag, all in the same order: they collide
        for i in range(flags.size):
            if atomics._flag(flags, i) == atomics.WRITING:
                waited[t] += 1
            if atomics._packing(flags, i):
                atomics._take_next(counts[i:i + 1])
                for c in range(width):
                    packed[i, c] = np.float32(i) + np.float32(c) / np.float32(width)
                atomics._publish(flags, i)
            for c in range(width):
                if packed[i, c] != np.float32(i) + np.float32(c) / np.float32(width):
                    bad[t] += 1

flags, iterations = int(sys.argv[1]), int(sys.argv[2])
packed = np.full((flags, 256), np.nan, np.float32)
counts, bad, waited = np.zeros(flags, np.int64), np.zeros(iterations, np.int64), np.zeros(iterations, np.int64)
race(np.zeros(flags, np.int64), packed, counts, bad, waited)
print(json.dumps({"threads": numba.get_num_threads(), "counts": np.bincount(counts).tolist(),
                  "bad": int(bad.sum()), "waited": int(waited.sum())}))
"""


def test_pack_once_flags_hold_under_threads_racing_for_them():
    """More of Numba's threads than cores (8 on this machine's cores) race over 1000 flags, 64
    prange iterations each visiting every flag in the same order: every flag is packed exactly
    once (a counter per flag, atomics._take_next), and every reader, whether it waited for the
    packer or came later, reads the packed values bit for bit (NaN before them). The waiting
    threads pause, then yield (atomics.SPINS), so the oversubscribed run ends."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_NUM_THREADS": "8"}
    result = subprocess.run([sys.executable, "-c", RACE, "1000", "64"], capture_output=True, text=True, env=env,
                            timeout=600, check=True)
    race = json.loads(result.stdout)
    assert race["threads"] == 8
    assert race["counts"] == [0, 1000]  # no flag packed twice or never: 1000 flags packed once
    assert race["bad"] == 0, f"{race['bad']} reads saw values that were not (yet) the packed ones"


@needs_amx
def test_weights_paired_by_vcvtne2ps2bf16_are_the_packing_of_the_rounded_weights():
    """bf16.round_and_pair (the AMX weights' step) against _pack_pairs (round to nearest even in
    integers) on weights in [0, 1] with many exact bf16 ties, bit for bit."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def pair(typingctx, x, out):
        def codegen(context, builder, signature, args):
            x_data = context.make_array(signature.args[0])(context, builder, args[0]).data
            out_data = context.make_array(signature.args[1])(context, builder, args[1]).data
            vector = ir.VectorType(ir.FloatType(), 16)
            even, odd = (builder.load(builder.bitcast(builder.gep(x_data, [ir.Constant(ir.IntType(64), 16 * i)]),
                                                      vector.as_pointer()), align=4) for i in (0, 1))
            words, even_f, odd_f = bf16.round_and_pair(builder, even, odd)
            for i, value in enumerate((words, even_f, odd_f)):
                target = builder.gep(out_data, [ir.Constant(ir.IntType(64), 16 * i)])
                builder.store(builder.bitcast(value, words.type), builder.bitcast(target, words.type.as_pointer()),
                              align=4)
            return context.get_dummy_value()

        return types.void(x, out), codegen

    run = numba.njit(lambda x, out: pair(x, out))
    rng = np.random.default_rng(5)
    ties = ((rng.integers(0x3000, 0x3F80, 4000, dtype=np.uint32) << 16) | 0x8000).view(np.float32)
    weights = np.concatenate([rng.random(4000, dtype=np.float32), ties, np.float32([0, 1, 2.0**-126])])
    weights = np.resize(weights, (-(-weights.size // 32), 32)).astype(np.float32)
    for row in weights:
        out = np.empty(48, np.uint32)
        run(row, out)
        want = np.empty((1, 16), np.uint32)
        _pack_pairs(row.reshape(2, 16), 2, want)
        rounded = round_to_bfloat16(row).view(np.uint32)
        np.testing.assert_array_equal(out[:16], want[0])
        np.testing.assert_array_equal(out[16:], rounded)
