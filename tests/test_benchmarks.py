"""The benchmark harness and attncore.bench: a fast smoke run, the careful naive baseline,
the peak and memory helpers, and the committed results. No test asserts a time."""
import json

import numpy as np
import pytest

import attncore
from attncore import bench, masks
from attncore.bench import impls, timing

from benchmarks import harness


def test_smoke_run_writes_every_field(tmp_path, capsys):
    out = tmp_path / "results.json"
    names = [n for n in ("naive", "textbook", "numpy_flash", "jit") if n in bench.available()]
    harness.main(["--sizes", "64", "--repeats", "1", "--no-rss", "--no-compile-check", "--out", str(out),
                  "--impls", *names])
    results = json.loads(out.read_text())
    assert {r["impl"] for r in results["rows"]} == set(names)
    assert all(r["max_error"] < 1e-5 and r["seconds"] > 0 for r in results["rows"])
    theory = results["peak"]["theoretical"]
    assert theory["cores"] >= 1 and theory["fma_pipes"] * theory["lanes"] >= 8
    bandwidth = results["peak"]["bandwidth"]                  # the sloped roof, one core and all of them
    assert bandwidth["per_core_gbs"] > 0 and bandwidth["all_cores_gbs"] > 0 and bandwidth["threads"] == theory["cores"]
    [ratios] = results["ratios"]
    assert ratios["n"] == 64 and ("jit" not in names or ratios["jit_vs_naive_full"] > 0)
    assert "jit/torch" in capsys.readouterr().out


def test_ratios_pair_the_calls_of_each_repeat():
    """A slow phase that hits one repeat moves the median of the paired ratios, not the ratio."""
    jit_times, torch_times = [1.0, 2.0, 4.0], [2.0, 1.0, 8.0]  # the second repeat: jit hit by a slow phase
    rows = [{"n": 8, "causal": False, "impl": name, "seconds": float(np.median(t)), "repeat_seconds": t}
            for name, t in (("jit", jit_times), ("torch", torch_times))]
    [entry] = timing.ratios(rows)
    assert entry["jit_vs_torch_full"] == 2.0  # paired: 2, 0.5, 2; the medians alone would give 1
    assert entry["jit_vs_naive_full"] is None and entry["jit_vs_torch_causal"] is None


@pytest.mark.parametrize("causal", [False, True])
def test_careful_naive_is_attention(causal):
    q, k, v = impls.inputs(70, 16, batch=2, heads=3)
    want = attncore.attention(*(x.astype(np.float64) for x in (q, k, v)), mask=masks.causal(70) if causal else None)
    got = impls.naive(q, k, v, causal)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_careful_naive_holds_one_matrix_textbook_three():
    q, k, v = impls.inputs(512, 64)
    matrix = 4 * 512**2
    careful = bench.traced(lambda: impls.naive(q, k, v, False))
    textbook = bench.traced(lambda: impls.textbook(q, k, v, False))
    assert matrix <= careful < 1.5 * matrix < 2.5 * matrix < textbook


def test_skip_reasons_follow_the_budget():
    assert timing.skip_reason("naive", 16384) is None  # one (N, N) float32 matrix: 1 GiB
    assert "GiB" in timing.skip_reason("textbook", 16384)
    assert "too slow" in timing.skip_reason("numpy_flash", 4096)


def test_blas_threads_restores_the_count():
    found = bench.machine._openblas()
    if found is None:
        pytest.skip("NumPy's OpenBLAS not found in this process")
    before = found[1]()
    with bench.blas_threads(1) as limited:
        assert limited and found[1]() == 1
    assert found[1]() == before


def test_published_results_meet_their_own_description():
    """The committed run that chapter 7 reads: every size, the jit path, both peaks, the ratios."""
    pub = bench.published()
    assert pub["settings"]["sizes"] == list(harness.SIZES)
    assert {"path", "mr", "nr"} <= set(pub["machine"]["jit"])
    assert pub["peak"]["theoretical"]["gflops"] and pub["peak"]["measured_gflops"]
    assert "bandwidth" in pub["peak"]         # measured, or null with a note saying it never was
    for t in pub["ratios"]:
        assert t["jit_vs_torch_full"] and t["jit_vs_torch_causal"] and t["jit_vs_naive_full"]
    assert all(r["max_error"] < 1e-5 for r in pub["rows"] if r.get("max_error") is not None)
