"""The CPU peers of the harness (attncore.bench.peers) and its timing logic.

Every registered peer that imports here is checked against float64 on small shapes (square,
causal, grouped-query decoding); one that does not import is skipped with the reason, so the
`-ra` summary names what was not checked. The pause, the rounds and the paired ratios are tested
with fake implementations and a fake clock. No test asserts a wall-clock time.
"""
import numpy as np
import pytest

import attncore
from attncore import masks
from attncore.bench import decode, impls, peers, stopwatch, timing

pytestmark = pytest.mark.xdist_group("numba-decode")  # one worker compiles each kernel once (conftest.py)

PEERS = ("jit", *peers.PEER_NAMES)


def peer_or_skip(name):
    peer = peers.PEERS[name]
    reason = peer.missing()
    if reason:
        pytest.skip(f"peer {name} not checked: {reason}")
    return peer


def agree(name, q, k, v, causal):
    peer = peer_or_skip(name)
    try:
        call = peer.prepare(q, k, v, causal, threads=2)
    except peers.Unsupported as why:
        pytest.skip(f"peer {name} not checked for this case: {why}")
    got = call.result()
    want = peers.float64_reference(q, k, v, causal)
    assert got.shape == want.shape and got.dtype == np.float32
    error = float(np.max(np.abs(got - want)))
    assert error <= peer.tolerance, f"{name}: max |error| {error:.1e} > its bound {peer.tolerance:.0e}"
    return call


@pytest.mark.slow
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("name", PEERS)
def test_peer_agrees_with_float64(name, causal):
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 2, 37, 16), dtype=np.float32) for _ in range(3))
    call = agree(name, q, k, v, causal)
    call()  # the timed call runs again on the same prepared inputs
    assert np.array_equal(call.result(), call.result()) or name == "openvino_default"


@pytest.mark.slow
@pytest.mark.parametrize("t_q", [1, 3, 70])
@pytest.mark.parametrize("name", PEERS)
def test_peer_decodes_grouped_query_heads(name, t_q):
    """q (1, 8, T_q, d) against k, v (1, 2, 70, d); T_q = 3 causal bottom-right, T_q = 70 square causal."""
    rng = np.random.default_rng(2)
    q = rng.standard_normal((1, 8, t_q, 32), dtype=np.float32)
    k, v = (rng.standard_normal((1, 2, 70, 32), dtype=np.float32) for _ in range(2))
    call = agree(name, q, k, v, {1: False, 3: "bottom_right", 70: True}[t_q])
    if name == "jit":
        assert "gqa" in call.details  # native or repeated, the row says which


@pytest.mark.slow
@pytest.mark.parametrize("name", ["jit_bf16", "jit_bf16_emulated"])
def test_jit_bf16_peers_are_timed_against_the_float32_path_with_their_own_bound(name):
    """jit's bfloat16 paths are rows of the peer table (their time over jit's float32 time),
    held to the bfloat16 bound, and say which precision ran."""
    assert name in peers.PEER_NAMES and peers.PEERS[name].tolerance == peers.TOLERANCE["bfloat16"]
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((1, 1, 64, 16), dtype=np.float32) for _ in range(3))
    call = agree(name, q, k, v, causal=False)
    assert call.details["precision"] == peers.PEERS[name].jit_precision


def test_float64_reference_is_attention_with_the_kv_heads_repeated():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 6, 5, 8))
    k, v = (rng.standard_normal((2, 3, 9, 8)) for _ in range(2))
    mask = masks.causal(5, 9, causal="bottom_right")
    want = attncore.attention(q, np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1), mask=mask)
    np.testing.assert_allclose(peers.float64_reference(q, k, v, "bottom_right"), want, rtol=0, atol=1e-12)


def test_square_causal_needs_equal_lengths():
    with pytest.raises(peers.Unsupported):
        peers._square_causal(True, 4, 9)
    assert peers._square_causal("bottom_right", 1, 9) == (False, False)  # one row: nothing masked
    assert peers._square_causal("bottom_right", 4, 9) == (False, True)
    assert peers._square_causal(True, 9, 9) == (True, False)


class FakeClock:
    """time.perf_counter and time.sleep for stopwatch.rounds: each call of an implementation moves
    the clock by that implementation's duration in the current round; a log keeps the order."""

    def __init__(self, durations):
        self.now, self.durations, self.log, self.round = 0.0, durations, [], 0

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.log.append(("pause", seconds))
        self.now += seconds

    def impl(self, name):
        def call():
            self.log.append(("call", name))
            self.now += self.durations[name][self.round]
        return call

    def next_round(self):
        self.round += 1


def test_every_timed_call_comes_after_a_pause_and_an_untimed_call():
    fake = FakeClock({"jit": [1.0, 2.0, 4.0], "peer": [2.0, 1.0, 8.0]})
    calls = {name: fake.impl(name) for name in ("jit", "peer")}
    times = stopwatch.rounds(calls, 3, pause=0.25, between=fake.next_round, sleep=fake.sleep, clock=fake.clock)
    assert times == {"jit": [1.0, 2.0, 4.0], "peer": [2.0, 1.0, 8.0]}  # the pause is never timed
    one_round = [("pause", 0.25), ("call", "jit"), ("call", "jit"), ("pause", 0.25), ("call", "peer"), ("call", "peer")]
    assert fake.log == one_round * 3


def test_short_calls_warm_up_for_at_least_the_warmup_before_the_timed_one():
    """After the pause the machine wakes slowly (timing's docstring): a call shorter than the
    warm-up runs untimed until the warm-up is over, and only the call after it is timed."""
    fake = FakeClock({"short": [0.125, 0.125], "long": [1.0, 1.0]})
    calls = {name: fake.impl(name) for name in ("short", "long")}
    times = stopwatch.rounds(calls, 2, pause=0.25, between=fake.next_round, sleep=fake.sleep, clock=fake.clock,
                          warmup=0.5)
    assert times == {"short": [0.125, 0.125], "long": [1.0, 1.0]}
    one_round = [("pause", 0.25)] + [("call", "short")] * 5 + [("pause", 0.25)] + [("call", "long")] * 2
    assert fake.log == one_round * 2  # 4 untimed short calls (0.5 s), then the timed one; 1 untimed long one


def test_rounds_also_record_cpu_seconds_when_asked():
    fake = FakeClock({"jit": [1.0, 1.0]})
    cpu = {}
    stopwatch.rounds({"jit": fake.impl("jit")}, 2, pause=0.1, sleep=fake.sleep, clock=fake.clock, cpu=cpu)
    assert list(cpu) == ["jit"] and len(cpu["jit"]) == 2 and all(s >= 0 for s in cpu["jit"])


def test_no_pause_means_no_sleep():
    fake = FakeClock({"jit": [1.0]})
    assert stopwatch.rounds({"jit": fake.impl("jit")}, 1, pause=0, sleep=fake.sleep, clock=fake.clock) == {"jit": [1.0]}
    assert ("pause", 0) not in fake.log and fake.log == [("call", "jit")] * 2


def test_peer_ratio_is_the_median_of_the_paired_rounds():
    """Round 2 hits jit with a slow phase: paired ratios 2, 0.5, 2 -> 2; the medians alone give 1."""
    jit, peer = [1.0, 2.0, 4.0], [2.0, 1.0, 8.0]
    rows = [{"n": 8, "causal": False, "impl": name, "seconds": float(np.median(t)), "repeat_seconds": t,
             "max_error": 1e-7, "note": None} for name, t in (("jit", jit), ("peer", peer))]
    rows.append({"n": 8, "causal": False, "impl": "gone", "note": "skipped: not installed"})
    table = timing.peer_ratios(rows, peers=["peer", "gone"])
    assert [(e["impl"], e["ratio"]) for e in table] == [("peer", 2.0), ("gone", None)]
    assert table[1]["note"] == "skipped: not installed"  # reported, not dropped
    assert stopwatch.paired(jit, peer) == 2.0 and stopwatch.paired(None, peer) is None


class FakePeer(peers.Peer):
    """Returns the float64 answer plus `offset`, or raises."""
    modules = ("numpy",)

    def __init__(self, name, offset=0.0, fail=None):
        self.name, self.offset, self.fail = name, offset, fail

    def prepare(self, q, k, v, causal, threads):
        if self.fail:
            raise self.fail
        out = (peers.float64_reference(q, k, v, causal) + self.offset).astype(np.float32)
        return peers.Call(lambda: out, lambda o: o, {"backend": f"fake {self.name}", "threads": threads})


@pytest.fixture
def fake_peers(monkeypatch):
    fakes = {"good": FakePeer("good"), "wrong": FakePeer("wrong", offset=1e-3),
             "broken": FakePeer("broken", fail=RuntimeError("no kernel for this CPU"))}
    monkeypatch.setattr(peers, "PEERS", {**peers.PEERS, **fakes})
    monkeypatch.setattr(peers, "PEER_NAMES", tuple(fakes))
    monkeypatch.setattr(impls, "IMPLS", {**impls.IMPLS, **{n: impls._one_shot(n) for n in fakes}})
    monkeypatch.setattr(impls, "REQUIRES", {**impls.REQUIRES, "absent": ("no_such_module_xyz",)})
    monkeypatch.setitem(impls.IMPLS, "absent", impls._one_shot("absent"))
    return fakes


def test_a_peer_is_checked_before_it_is_timed_and_reported_when_skipped(fake_peers):
    rows = timing.run([24], repeats=2, rss=False, names=["good", "wrong", "broken", "absent"], pause=0)
    by = {(r["impl"], r["causal"]): r for r in rows}
    assert len(rows) == 8  # every peer, causal and not: none dropped
    for causal in (False, True):
        good, wrong, broken, absent = (by[name, causal] for name in ("good", "wrong", "broken", "absent"))
        assert good["note"] is None and len(good["repeat_seconds"]) == 2 and good["max_error"] < 1e-6
        assert good["backend"] == "fake good" and good["details"]["threads"] >= 1
        assert len(good["repeat_cpu_seconds"]) == 2 and "repeat_cpu_seconds" not in good["details"]
        assert "seconds" not in wrong and "max |error| 1.0e-03" in wrong["note"] and wrong["max_error"] > 9e-4
        assert "seconds" not in broken and "no kernel for this CPU" in broken["note"]
        assert "seconds" not in absent and "no_such_module_xyz is not installed" in absent["note"]


def test_decode_rows_report_bandwidth_and_skips(fake_peers):
    roof = {"threads": 2, "read_gbs": 10.0, "copy_gbs": 8.0, "last_level_cache_bytes": 2**20}
    out = decode.run(t_ks=(64,), t_qs=(1, 2), names=("good", "wrong", "broken"), repeats=3, pause=0, threads=2,
                     roof=roof, h_q=4, h_kv=2, d=8, mib=4)
    rows = {(r["impl"], r["t_q"]): r for r in out["rows"]}
    assert len(rows) == 6 and out["settings"]["pause_s"] == 0 and out["settings"]["warmup_s"] == stopwatch.WARMUP
    good = rows["good", 2]
    assert good["causal"] == "bottom_right" and good["kv_bytes"] == decode.kv_bytes(64, 2, 8) == 2 * 2 * 64 * 8 * 4
    assert good["gbs"] == pytest.approx(good["kv_bytes"] / good["seconds"] / 1e9)
    assert good["read_fraction"] == pytest.approx(good["gbs"] / 10.0) and good["fits_in_cache"]
    assert "max |error|" in rows["wrong", 1]["note"] and "no kernel" in rows["broken", 1]["note"]
    assert "paired_read_fraction" not in rows["wrong", 1]  # not timed: no share
    reads = {(r["reader"], r["t_q"]): r for r in out["reads"]}
    assert sorted(reads) == sorted((name, t_q) for name in decode.READERS for t_q in (1, 2))
    for t_q in (1, 2):
        good = rows["good", t_q]
        memory, kv = reads["memory_read", t_q], reads["kv_read", t_q]
        assert memory["details"]["bytes"] == 4 * 2**20 and kv["details"]["bytes"] == good["kv_bytes"]
        for reader, key in ((memory, "paired_read_fraction"), (kv, "kv_read_fraction")):
            assert len(reader["repeat_seconds"]) == 3 and reader["note"] is None
            assert reader["gbs"] == pytest.approx(reader["details"]["bytes"] / reader["seconds"] / 1e9)
            # the implementation's GB/s over the reader's, round by round, then the median
            within = [(good["kv_bytes"] / mine) / (reader["details"]["bytes"] / theirs)
                      for mine, theirs in zip(good["repeat_seconds"], reader["repeat_seconds"])]
            assert good[key] == pytest.approx(float(np.median(within)))


def test_decode_reports_a_reader_that_cannot_run(fake_peers, monkeypatch):
    """Without Numba there is no reader: the rows keep the once-measured share and no paired one."""
    monkeypatch.setattr(peers.PEERS["jit"], "missing", lambda: "numba is not installed")
    roof = {"threads": 1, "read_gbs": 10.0, "copy_gbs": 8.0, "last_level_cache_bytes": None}
    out = decode.run(t_ks=(32,), t_qs=(1,), names=("good",), repeats=2, pause=0, threads=1, roof=roof,
                     h_q=2, h_kv=1, d=8, mib=4)
    (row,) = out["rows"]
    assert row["paired_read_fraction"] is None and row["kv_read_fraction"] is None and row["read_fraction"] > 0
    assert all(r["note"] == "skipped: numba is not installed" and "seconds" not in r for r in out["reads"])


@pytest.mark.parametrize("shape", [(1, 2, 40, 8), (1, 8, 300, 128)])
def test_the_paired_readers_read_every_byte_once(shape):
    """kv_reader sums K and V by their own rows, memory_reader its own array of ones: exact sums."""
    from attncore.bench import reader

    rng = np.random.default_rng(1)
    k, v = (rng.integers(-8, 9, shape).astype(np.float32) for _ in range(2))
    call = reader.kv_reader(k, v, threads=2)
    assert call.result() == k.sum(dtype=np.float64) + v.sum(dtype=np.float64) and call.details["bytes"] == 2 * k.nbytes
    memory = reader.memory_reader(1, threads=2)
    assert memory.result() == 2**20 // 4 and memory.details["bytes"] == 2**20 and "1 MiB" in memory.details["method"]


@pytest.mark.parametrize("rows, parts", [(1, 1), (37, 2), (100, 3), (16, 4)])
def test_the_read_roof_reads_every_row_once(rows, parts):
    """The roof's reader (asking for rows ahead, none past its part) sums each row once, whatever
    the split; numbers that are exact in float32, so the sum is exact too."""
    from attncore.bench import reader

    array = np.random.default_rng(rows).integers(-8, 9, (rows, reader.ROW)).astype(np.float32)
    assert reader._sum_rows(array, parts) == array.sum(dtype=np.float64)


def test_the_read_roof_restores_numba_threads():
    import numba

    from attncore.bench import machine

    before = numba.get_num_threads()
    assert machine.read_bandwidth(threads=1, mib=4, repeats=1) > 0 and numba.get_num_threads() == before
    assert "ahead" in machine.read_method(4) and "4 MiB" in machine.read_method(4)


def test_pause_is_a_setting_of_the_results(tmp_path):
    from benchmarks import harness

    args = harness.parse_args(["--pause", "0.2", "--decode-long", "--out", str(tmp_path / "r.json")])
    assert args.pause == 0.2 and args.decode and args.decode_t_k == (*decode.T_KS, decode.LONG_T_K)
    assert harness.parse_args([]).pause == stopwatch.PAUSE and not harness.parse_args([]).decode
