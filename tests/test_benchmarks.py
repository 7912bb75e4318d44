"""The benchmark harness and attncore.bench: a fast smoke run, the careful naive baseline,
the peak and memory helpers, and the committed results. No test asserts a time."""
import json

import numpy as np
import pytest

import attncore
from attncore import bench, masks
from attncore.bench import impls, stopwatch, timing
from benchmarks import harness

pytestmark = pytest.mark.xdist_group("numba-decode")  # one worker compiles each kernel once (conftest.py)


@pytest.mark.slow
def test_smoke_run_writes_every_field(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench.machine, "memory_mib", lambda: 64)   # the fields, not a bandwidth: small arrays
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
    assert bandwidth["all_cores_gbs"] == max(bandwidth["all_cores_runs_gbs"])   # every copy kept: the ridge's range
    [ratios] = results["ratios"]
    assert ratios["n"] == 64 and ("jit" not in names or ratios["jit_vs_naive_full"] > 0)
    assert "jit/torch" in capsys.readouterr().out
    # what the book's method boxes read: the commit, the method as run, the machine's caches and clock
    method = results["settings"]["method"]
    assert method["pause_s"] == stopwatch.PAUSE and method["warmup_s"] == stopwatch.WARMUP
    assert method["thread_policy"]["workers"] == bench.isolated.WORKER_ENV and method["repeats"] == 1
    assert results["machine"]["source"]["commit"] and "attncore_modified" in results["machine"]["source"]
    assert "last_level_cache_bytes" in results["machine"] and "l1_data_cache_bytes" in results["machine"]
    clock = results["peak"]["measured_clock"]
    assert clock is None or clock["ghz"] > 0
    assert bandwidth["array_mib"] == 64 and "64 MiB" in bandwidth["method"] and "64 MiB" in bandwidth["read_method"]


def test_publish_names_the_file_by_its_date_cpu_and_commit():
    info = {"date": "2026-12-06T03:00:00+00:00", "cpu": "AMD EPYC 9R14 96-Core Processor", "cores": 2,
            "source": {"commit": "0123456789abcdef"}}
    assert harness.published_path(info).name == "2026-12-06-amd-epyc-9r14-96-core-processor-2-cores-0123456789.json"
    info["jit"] = {"cpu_name": "znver4"}
    assert harness.published_path(info) == harness.PUBLISHED / "2026-12-06-znver4-2-cores-0123456789.json"
    args = harness.parse_args(["--publish", "--sizes", "64"])
    assert args.sizes == harness.SIZES and args.decode and bench.decode.LONG_T_K in args.decode_t_k


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
    other = 2 if before == 1 else 1  # the tests run with one BLAS thread (conftest.py)
    with bench.blas_threads(other) as limited:
        assert limited and found[1]() == other
    assert found[1]() == before


def test_published_results_meet_their_own_description():
    """The committed run that chapter 7 reads: every size, the jit path, both peaks, the ratios."""
    pub = bench.published("chapter7")
    assert pub["settings"]["sizes"] == list(harness.SIZES)
    assert {"path", "mr", "nr"} <= set(pub["machine"]["jit"])
    assert pub["peak"]["theoretical"]["gflops"] and pub["peak"]["measured_gflops"]
    assert "bandwidth" in pub["peak"]         # measured, or null with a note saying it never was
    for t in pub["ratios"]:
        assert t["jit_vs_torch_full"] and t["jit_vs_torch_causal"] and t["jit_vs_naive_full"]
    # the course's own float32 implementations (no recorded bound) within float32 accuracy,
    # each peer and each bfloat16 route within the bound the run recorded for it
    assert all(r["max_error"] < (r.get("error_bound") or 1e-5)
               for r in pub["rows"] if r.get("max_error") is not None)


def test_the_add_chain_runs_every_add_and_gives_a_clock():
    """The chain's result proves that its adds ran (no optimiser folded them); the clock is
    only checked to be a clock, not timed against anything."""
    from attncore.bench import clock

    chain = clock._add_chain()
    if chain is None:
        pytest.skip("no add chain for this architecture")
    assert chain(10, 7) == 7 + 10 * clock.ADDS_PER_STEP * 7
    measured = clock.measured_clock(threads=2, adds=10**7, repeats=2)
    assert measured["threads"] == 2 and len(measured["runs_ghz"]) == 2 and 0.1 < measured["ghz"] < 10
    theory = {"cores": 2, "fma_pipes": 2, "lanes": 16}
    assert clock.peak_at(theory, 2.5) == 2 * 2 * 16 * 2 * 2.5


def test_perf_output_is_read_and_a_missing_counter_is_never_a_count(monkeypatch):
    from attncore.bench import clock

    text = "<not supported>,,cycles,0,100.00,,\n12345,,instructions:u,1000,100.00,,\n\n# comment\n"
    assert clock.parse_perf_stat(text) == {"cycles": None, "instructions": 12345.0}
    ran = type("Run", (), {"returncode": 1, "stderr": "Error:\nNo permission to enable cycles event.\n"})
    monkeypatch.setattr(clock.shutil, "which", lambda name: "/usr/bin/perf")
    monkeypatch.setattr(clock.subprocess, "run", lambda *args, **kwargs: ran)
    assert clock.perf_counters() == {"available": False, "counts": None, "reason": "perf stat failed: Error:"}
    ran.returncode, ran.stderr = 0, "1000,,cycles,5,100.00,,\n2000,,instructions,5,100.00,,\n"
    assert clock.perf_counters()["counts"] == {"cycles": 1000.0, "instructions": 2000.0}
    monkeypatch.setattr(clock.shutil, "which", lambda name: None)
    assert clock.perf_counters() == {"available": False, "reason": "perf is not installed", "counts": None}
    assert clock.cycles_per_add() is None


def test_thread_scaling_pairs_the_rounds():
    calls = []
    scaling = stopwatch.thread_scaling(lambda n: (lambda: calls.append(n)), counts=(1, 2), repeats=3, pause=0, warmup=0)
    assert calls.count(1) == calls.count(2) == 6          # each timed call after one untimed one (no warm-up)
    assert set(scaling["seconds"]) == {1, 2} and scaling["speedup"][1] == 1.0
    per_core = bench.machine.threads_per_core()
    assert per_core is None or per_core >= 1


def test_every_bandwidth_of_a_run_reads_an_array_from_memory_not_a_cache():
    """One array size for the copy and the read roofs (the old copy at 256 MiB and the decode
    roof at 1 GiB gave two copy bandwidths of one run): at least 1 GiB and twice the last cache."""
    mib = bench.machine.memory_mib()
    cache = bench.machine.last_level_cache_bytes() or 0
    assert mib >= 1024 and mib * 2**20 >= 2 * cache
