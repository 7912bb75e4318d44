"""The "how this was measured" box of a run, read from the fields its results file recorded.

Every line comes from the file: a field the file lacks is shown as NOT_RECORDED, never taken
from today's code (the harness's defaults have changed since older runs were measured).
"""
NOT_RECORDED = "not recorded"


def _ms(seconds: float | None) -> str | None:
    return None if seconds is None else f"{seconds * 1e3:g} ms"


def method_box(run: dict) -> dict[str, str]:
    """{line title: text} of one run of the harness (its "machine" and "settings"; a run of the
    decode scenario alone keeps its settings in "decode")."""
    machine = run.get("machine") or {}
    settings = run.get("settings") or (run.get("decode") or {}).get("settings") or {}
    source = machine.get("source") or {}
    jit = machine.get("jit") or {}
    method = settings.get("method") or {}
    versions = machine.get("versions") or {}
    policy = (method.get("thread_policy") or {}).get("workers") or settings.get("worker_env") or {}
    harness_policy = (machine.get("env") or {}).get("OMP_WAIT_POLICY")
    commit = source.get("commit")
    pause, warmup = settings.get("pause_s"), settings.get("warmup_s")
    load, load_end = machine.get("load_average"), run.get("load_average_end")
    fields = {
        "commit measured": commit and (commit[:10] + (" (attncore/ modified)" if source.get("attncore_modified")
                                                      else "")),
        "date": machine.get("date") and machine["date"][:16].replace("T", " ") + " UTC",
        "CPU": machine.get("cpu") and (f"{machine['cpu']}, {machine.get('cores')} cores"
                                       + (f" (LLVM target: {jit['cpu_name']})" if jit.get("cpu_name") else "")),
        "versions": ", ".join(f"{name} {versions[name]}" for name in ("numpy", "numba", "torch") if versions.get(name))
        or None,
        "processes": settings.get("processes"),
        "OpenMP wait policy": (f"OMP_WAIT_POLICY={policy['OMP_WAIT_POLICY']} in the workers" if policy.get(
            "OMP_WAIT_POLICY") else f"OMP_WAIT_POLICY={harness_policy}" if harness_policy else None),
        "pause before each timed call": _ms(pause),
        "untimed calls before it": warmup and f"for at least {_ms(warmup)}, at least one",
        "rounds": settings.get("repeats") and f"{settings['repeats']}, every implementation timed once in each",
        "load average": load is not None and (f"{load:.2f} at the start"
                                              + (f", {load_end:.2f} at the end" if load_end is not None else "")),
    }
    return {title: text if text else NOT_RECORDED for title, text in fields.items()}


def text(box: dict[str, str]) -> str:
    """The box as one paragraph, "title: text; ...", for {glue:text} inside an admonition."""
    return "; ".join(f"{title}: {line}" for title, line in box.items()) + "."
