"""What the peers page says about jit's bfloat16 paths (precision="bf16"): their speed against
the float32 path and against OpenVINO's default precision, goal by goal and from run to run,
their error against float64 and OpenVINO's, and whether their weights stay on the simplex.
Functions of a peers results file, as in peer_story.py (whose helpers they share), tested
in tests/test_peers_page.py.
"""
from .peer_story import GOALS, entries, peers_of, precision, row_of, shape_name, shape_names, shapes, span, title
from .story import BF16_ROUTES, and_list


def _met_where(met, shapes_measured):
    """'met at every shape', 'met at N = ... only' or 'missed at every shape'."""
    if len(met) == len(shapes_measured):
        return "met at every shape"
    return f"met at {shape_names(met)} only" if met else "missed at every shape"


def bf16_sentence(run):
    """What the run timed of jit's bfloat16 paths: speed against the float32 path and against
    OpenVINO's default precision (with the goals of issue 23), or that it timed none."""
    own = [name for name in peers_of(run, own_bf16=True) if any(e[2] for e in entries(run, name))]
    if not own:
        return ("This run did not time jit's bfloat16 paths: its speed against float32 is not in the published "
                "results (the harness now times them in every run, as the rows jit_bf16 and jit_bf16_emulated).")
    parts = []
    openvino = {(n, c): (r, e) for n, c, r, e, _ in entries(run, "openvino_default") if r}
    for name in own:
        timed = [(n, c, r, e) for n, c, r, e, _ in entries(run, name) if r]
        speed = [1 / r for *_, r, _ in timed]
        met = [t for t, s in zip(timed, speed) if s >= GOALS["bf16_over_f32"]]
        route = (row_of(run, timed[0][0], timed[0][1], name).get("details") or {}).get("products")
        how = f", its products {BF16_ROUTES[route]}," if route in BF16_ROUTES and name == "jit_bf16" else ""
        parts.append(f"{title(name)}{how} ran at {span(speed)} times the float32 path's speed, so the goal of "
                     f"{GOALS['bf16_over_f32']:g} times is " + _met_where(met, timed))
        versus = [(n, c, openvino[n, c][0] / r, e <= openvino[n, c][1]) for n, c, r, e in timed if (n, c) in openvino]
        if versus:
            both = [v for v in versus if v[2] >= GOALS["bf16_over_openvino"] and v[3]]
            no_larger = [v for v in versus if v[3]]
            parts.append(f"against OpenVINO's default precision it ran at {span([v[2] for v in versus])} times its "
                         "speed, with an error no larger than OpenVINO's at "
                         f"{'every shape' if len(no_larger) == len(versus) else shape_names(no_larger)}: "
                         f"the goal ({GOALS['bf16_over_openvino']:g} times as fast, error no larger) is "
                         + _met_where(both, versus))
    return "; ".join(parts) + "."


def bf16_run_to_run(pub, name="jit_bf16"):
    """{goal: {(n, causal): [(quotient, met) in the published peers run, then in each of
    pub["other_peer_runs"]]}} for jit's bfloat16 path, at the shapes every run timed:
    "bf16_over_f32" (jit's float32 time over its time) and "bf16_over_openvino" (OpenVINO
    default's time over its time; met also needs an error no larger than OpenVINO's)."""
    tables = [pub["peers"]["peer_ratios"]] + [other["peer_ratios"] for other in pub.get("other_peer_runs", [])]
    out = {"bf16_over_f32": {}, "bf16_over_openvino": {}}
    for n, causal in shapes(pub["peers"]):
        found = [{e["impl"]: e for e in table if (e["n"], e["causal"]) == (n, causal)} for table in tables]
        own = [run.get(name) for run in found]
        if not all(e and e["ratio"] for e in own):
            continue
        out["bf16_over_f32"][n, causal] = [(1 / e["ratio"], 1 / e["ratio"] >= GOALS["bf16_over_f32"]) for e in own]
        openvino = [run.get("openvino_default") for run in found]
        if all(e and e["ratio"] for e in openvino):
            out["bf16_over_openvino"][n, causal] = [
                (o["ratio"] / e["ratio"], o["ratio"] / e["ratio"] >= GOALS["bf16_over_openvino"]
                 and e["max_error"] <= o["max_error"]) for e, o in zip(own, openvino)]
    return out


def bf16_run_to_run_sentence(pub):
    """Whether jit bf16's goals got the same verdict in every peers run of the file, and where
    not, the quotient's range and in how many runs the goal was met ('' if the published run
    did not time jit bf16, or the other runs are of another CPU)."""
    others = pub.get("other_peer_runs", [])
    goals = bf16_run_to_run(pub)
    if not goals["bf16_over_f32"] or any(o["cpu"] != pub["peers"]["machine"]["cpu"] for o in others):
        return ""
    if not others:
        return ("The file holds one peers run, so it cannot say whether jit bf16's verdicts hold from one run to "
                "the next.")
    runs = len(others) + 1
    clauses = []
    for goal, what in (("bf16_over_f32", "the float32 path"), ("bf16_over_openvino", "OpenVINO's default precision")):
        if not goals[goal]:  # no OpenVINO default rows
            continue
        moved = {shape: cells for shape, cells in goals[goal].items() if len({met for _, met in cells}) > 1}
        if not moved:
            clauses.append(f"goal against {what} got the same verdict at every shape in every run")
            continue
        listed = and_list([f"{shape_name(n, c)} ({span([q for q, _ in cells])} times, met in "
                           f"{sum(m for _, m in cells)} of {runs})" for (n, c), cells in moved.items()])
        clauses.append(f"goal against {what} got a verdict that changed with the run at {listed}")
    return (f"Across the file's {runs} peers runs, jit bf16's " + "; its ".join(clauses)
            + ". A goal that holds in some runs only is not one to rely on at that shape.")


def error_comparison(mine, theirs, tolerance=0.1):
    """'smaller than', 'larger than' or 'about the same as' for two errors (10% counts as the same)."""
    if mine < theirs * (1 - tolerance):
        return "smaller than"
    if mine > theirs * (1 + tolerance):
        return "larger than"
    return "about the same as"


def openvino_errors(run):
    """{(n, causal): max |error|} of OpenVINO's default precision where the run checked it."""
    return {(n, c): e for n, c, _, e, _ in entries(run, "openvino_default") if e is not None}


def bf16_error_sentence(errors, run, route):
    """errors: {(n, causal): max |error| against float64} of precision="bf16" on this build, on
    the harness's inputs (bench.impls.inputs); route: how it ran its products (a key of
    story.BF16_ROUTES). Compared shape by shape with OpenVINO's default precision in the run,
    where the run has it."""
    mine = "; ".join(f"{e:.1e} at {shape_name(n, c)}" for (n, c), e in errors.items())
    text = f"With bfloat16 products {BF16_ROUTES[route]}, this build's kernel was off from float64 by {mine}."
    theirs = openvino_errors(run)
    shared = [key for key in errors if key in theirs]
    if precision(run, "openvino_default") == "float32" or not shared:
        return text + " The published run has no reduced-precision OpenVINO error at these shapes to compare with."
    compared_ = [f"{error_comparison(errors[key], theirs[key])} OpenVINO's {theirs[key]:.1e} at {shape_name(*key)}"
                 for key in shared]
    return text + (f" That is {'; '.join(compared_)} (its default precision, {precision(run, 'openvino_default')}, "
                   "in the published run, on the same inputs).")


def simplex_sentence(reports):
    """reports: {causal: invariants.RowReport} of weights computed with precision="bf16" (the
    output for V = the identity is the weight matrix itself)."""
    on = [c for c, r in reports.items() if r.on_simplex]
    worst = max(r.worst_row_error for r in reports.values())
    atol = min(r.atol for r in reports.values())
    if len(on) == len(reports):
        return (f"Every row of those weights is on the simplex: entries in [0, 1], and no row sum further than "
                f"{worst:.1e} from 1, within the float32 tolerance of {atol:.1e}.")
    return (f"Not every row of those weights is on the simplex ({', '.join(str(r) for r in reports.values())}): the "
            f"worst row sum is {worst:.1e} from 1, against the float32 tolerance of {atol:.1e}.")
