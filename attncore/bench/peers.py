"""The CPU peers of attncore.jit: PyTorch SDPA, ONNX Runtime, OpenVINO (float32 and its
default precision), JAX. Installed with the `bench-peers` extra; each is imported on first use.

Every peer is prepared once per shape, outside the timing: its inputs are put in the layout
its fast path takes (PyTorch and OpenVINO (B, H, T, d); ONNX Runtime and JAX (B, T, H, d),
a copy made before the clock starts), its graph is built and compiled, its thread count set.
The timed call is then the library's own call and nothing else:

    call = PEERS["openvino_f32"].prepare(q, k, v, causal, threads=2)
    call()              # the timed call (returns the peer's own output object)
    call.result()       # runs once more and returns float32 (B, H_q, T_q, d) for the error check
    call.details        # what ran: backend, layout, precision, threads

q is (B, H_q, T_q, d); k, v are (B, H_kv, T_k, d) with H_q a multiple of H_kv (PyTorch's
`enable_gqa` convention). causal: False, True (square: top-left = bottom-right), or
"bottom_right" (decoding: query i sees keys up to T_k - T_q + i). A peer that cannot do a
case raises Unsupported with the reason, which the harness reports.
"""
import importlib
import importlib.metadata
import importlib.util

import numpy as np

# Largest max |error| against float64 each precision may show before a peer's row is
# reported as skipped instead of timed: well above what each precision gives (benchmarks/NOTES.md).
TOLERANCE = {"float32": 1e-5, "bfloat16": 3e-2}


class Unsupported(Exception):
    """This peer cannot compute this case (the message says why)."""


def _square_causal(causal, t_q, t_k):
    """True, False or "bottom_right" -> (is_causal for a square peer flag, needs an explicit mask)."""
    if not causal:
        return False, False
    if causal is True and t_q != t_k:
        raise Unsupported("causal=True needs T_q == T_k: pass 'bottom_right'")
    if t_q == t_k:
        return True, False
    return False, t_q > 1  # bottom-right with one query row masks nothing


def allowed(t_q: int, t_k: int) -> np.ndarray:
    """Bottom-right causal mask (T_q, T_k), True = may attend."""
    return np.arange(t_k)[None, :] <= np.arange(t_q)[:, None] + (t_k - t_q)


def float64_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool | str = False) -> np.ndarray:
    """Exact enough: float64 NumPy, one kv head at a time with its G query heads (no repeat)."""
    b, h_q, t_q, d = q.shape
    h_kv, t_k = k.shape[1], k.shape[2]
    g = h_q // h_kv
    out = np.empty((b, h_q, t_q, v.shape[-1]), np.float64)
    mask = allowed(t_q, t_k) if causal else None
    for i in range(b):
        for h in range(h_kv):
            qs = q[i, h * g:(h + 1) * g].astype(np.float64)  # (G, T_q, d)
            kh, vh = k[i, h].astype(np.float64), v[i, h].astype(np.float64)
            s = qs @ kh.T / np.sqrt(d)  # (G, T_q, T_k)
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            s -= s.max(axis=-1, keepdims=True)
            p = np.exp(s)
            p /= p.sum(axis=-1, keepdims=True)
            out[i, h * g:(h + 1) * g] = p @ vh
    return out


class Call:
    """One prepared peer call: call() is what is timed; result() -> float32 (B, H_q, T_q, d)."""

    def __init__(self, run, convert, details, keep=()):
        self.run, self.convert, self.details, self._keep = run, convert, details, keep

    def __call__(self):
        return self.run()

    def result(self) -> np.ndarray:
        return np.asarray(self.convert(self.run()), dtype=np.float32)


class Peer:
    name = ""
    modules = ()  # importable modules it needs
    precision = "float32"  # of the products, which sets the error bound

    @property
    def tolerance(self) -> float:
        return TOLERANCE[self.precision]

    def missing(self) -> str | None:
        """None if importable, else why not (the skip reason)."""
        for module in self.modules:
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed (pip install -e '.[bench-peers]')"
        try:
            for module in self.modules:
                importlib.import_module(module)
        except Exception as error:  # a broken install is reported, not raised
            return f"import {module} failed: {type(error).__name__}: {error}"
        return None

    def prepare(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool | str, threads: int) -> Call:
        raise NotImplementedError


class TorchSDPA(Peer):
    """torch.nn.functional.scaled_dot_product_attention on 4-D (B, H, T, d) tensors sharing the
    arrays' memory; enable_gqa when H_q != H_kv; a boolean mask for bottom-right causal."""
    name, modules = "torch", ("torch",)

    def prepare(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool | str, threads: int) -> Call:
        import torch
        from torch.nn.attention import SDPBackend

        torch.set_num_threads(threads)
        tq, tk, tv = (torch.from_numpy(np.ascontiguousarray(x)) for x in (q, k, v))
        is_causal, masked = _square_causal(causal, q.shape[2], k.shape[2])
        mask = torch.from_numpy(allowed(q.shape[2], k.shape[2])) if masked else None
        gqa = q.shape[1] != k.shape[1]
        sdpa = torch.nn.functional.scaled_dot_product_attention
        kwargs = dict(attn_mask=mask, is_causal=is_causal, enable_gqa=gqa)
        choice = int(torch._fused_sdp_choice(tq, tk, tv, **kwargs))
        backend = next((n for n, m in SDPBackend.__members__.items() if int(m) == choice), str(choice))

        def run():
            return sdpa(tq, tk, tv, **kwargs)

        details = {"backend": backend, "layout": "(B, H, T, d)", "threads": torch.get_num_threads(),
                   "version": importlib.metadata.version("torch"), "enable_gqa": gqa,
                   "mask": "bool (T_q, T_k)" if masked else None,
                   "how": "torch._fused_sdp_choice with the call's arguments"}
        return Call(run, lambda out: out.numpy(), details)


class OnnxRuntime(Peer):
    """ONNX Runtime's com.microsoft MultiHeadAttention (H_q == H_kv; causal = unidirectional) or,
    for grouped-query heads, GroupQueryAttention decoding over a KV cache whose past and present
    buffers are one (bound with IOBinding, as ONNX Runtime's generate loop does). The one-node
    graph is built here with onnx.helper. Inputs (B, T, H * d): the op's fast layout."""
    name, modules = "onnxruntime", ("onnx", "onnxruntime")

    def _session(self, nodes, inputs, outputs, threads):
        import onnxruntime as ort
        from onnx import helper

        graph = helper.make_graph(nodes, self.name, inputs, outputs)
        opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
        model = helper.make_model(graph, opset_imports=opsets)
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

    def prepare(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool | str, threads: int) -> Call:
        b, h_q, t_q, d = q.shape
        h_kv, t_k = k.shape[1], k.shape[2]
        if h_q != h_kv:
            return self._gqa(q, k, v, causal, threads)
        from onnx import TensorProto, helper

        is_causal, masked = _square_causal(causal, t_q, t_k)
        if masked:
            raise Unsupported("MultiHeadAttention's unidirectional mask is top-left; "
                              "bottom-right with T_q > 1 not wired")

        def flat(x):
            return np.ascontiguousarray(x.transpose(0, 2, 1, 3).reshape(b, x.shape[2], -1))
        feed = {"query": flat(q), "key": flat(k), "value": flat(v)}
        inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, list(x.shape)) for name, x in feed.items()]
        output = helper.make_tensor_value_info("output", TensorProto.FLOAT, [b, t_q, h_q * d])
        node = helper.make_node("MultiHeadAttention", list(feed), ["output"], domain="com.microsoft",
                                num_heads=h_q, unidirectional=int(is_causal))
        session = self._session([node], inputs, [output], threads)

        def run():
            return session.run(None, feed)[0]

        details = {"backend": "com.microsoft.MultiHeadAttention", "layout": "(B, T, H * d)", "threads": threads,
                   "version": importlib.metadata.version("onnxruntime"), "providers": session.get_providers()}
        return Call(run, lambda out: out.reshape(b, t_q, h_q, d).transpose(0, 2, 1, 3), details, (session, feed))

    def _gqa(self, q, k, v, causal, threads):
        import onnxruntime as ort
        from onnx import TensorProto, helper

        b, h_q, t_q, d = q.shape
        h_kv, t_k = k.shape[1], k.shape[2]
        if t_q > 1 and not causal:
            raise Unsupported("GroupQueryAttention is always causal (bottom-right); non-causal T_q > 1 not wired")
        def info(name, shape, kind=TensorProto.FLOAT):
            return helper.make_tensor_value_info(name, kind, shape)
        inputs = [info("query", [b, t_q, h_q * d]), info("key", [b, t_q, h_kv * d]), info("value", [b, t_q, h_kv * d]),
                  info("past_key", [b, h_kv, t_k, d]), info("past_value", [b, h_kv, t_k, d]),
                  info("seqlens_k", [b], TensorProto.INT32), info("total_sequence_length", [], TensorProto.INT32)]
        outputs = [info("output", [b, t_q, h_q * d]), info("present_key", [b, h_kv, t_k, d]),
                   info("present_value", [b, h_kv, t_k, d])]
        node = helper.make_node("GroupQueryAttention", [i.name for i in inputs], [o.name for o in outputs],
                                domain="com.microsoft", num_heads=h_q, kv_num_heads=h_kv)
        session = self._session([node], inputs, outputs, threads)
        # The cache holds all T_k keys; the last T_q are also this step's new key/value, which
        # the op writes into the shared buffer at the positions where they already are.
        cache_k, cache_v = (ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(x)) for x in (k, v))
        def flat(x):
            return np.ascontiguousarray(x.transpose(0, 2, 1, 3).reshape(b, x.shape[2], -1))
        binding = session.io_binding()
        binding.bind_cpu_input("query", flat(q))
        binding.bind_cpu_input("key", flat(k[:, :, t_k - t_q:]))
        binding.bind_cpu_input("value", flat(v[:, :, t_k - t_q:]))
        binding.bind_ortvalue_input("past_key", cache_k)
        binding.bind_ortvalue_input("past_value", cache_v)
        binding.bind_cpu_input("seqlens_k", np.full(b, t_k - 1, np.int32))
        binding.bind_cpu_input("total_sequence_length", np.array(t_k, np.int32))
        binding.bind_output("output", "cpu")
        binding.bind_ortvalue_output("present_key", cache_k)
        binding.bind_ortvalue_output("present_value", cache_v)

        def run():
            session.run_with_iobinding(binding)
            return binding

        def convert(bound):
            return bound.get_outputs()[0].numpy().reshape(b, t_q, h_q, d).transpose(0, 2, 1, 3)

        details = {"backend": "com.microsoft.GroupQueryAttention (past and present share one buffer)",
                   "layout": "q (B, T_q, H_q * d), cache (B, H_kv, T_k, d)", "threads": threads,
                   "version": importlib.metadata.version("onnxruntime")}
        return Call(run, convert, details, (session, cache_k, cache_v))


class OpenVINO(Peer):
    """OpenVINO's opset13 ScaledDotProductAttention compiled for the CPU, inputs (B, H, T, d) shared
    with the arrays; grouped-query heads as a 5-D broadcast, q (B, H_kv, G, T_q, d) against
    k, v (B, H_kv, 1, T_k, d); bottom-right causal as a boolean mask constant."""
    modules = ("openvino",)

    def __init__(self, name, hint):
        self.name, self.hint = name, hint  # hint: INFERENCE_PRECISION_HINT, or None for the default
        self._precision = "float32" if hint == "f32" else None

    @property
    def precision(self) -> str:
        if self._precision is None:  # asks OpenVINO on first use, not on import
            self._precision = self.default_precision()
        return self._precision

    @staticmethod
    def default_precision():
        """The CPU plugin's default inference precision here (bf16 on CPUs with AVX512_BF16 or AMX)."""
        if importlib.util.find_spec("openvino") is None:
            return "bfloat16"  # the strict bound; the peer is skipped anyway
        try:
            import openvino as ov

            hint = ov.Core().get_property("CPU", "INFERENCE_PRECISION_HINT").get_type_name()
        except Exception:
            return "bfloat16"
        return "float32" if hint == "f32" else "bfloat16"  # bf16, or f16 on some CPUs: the looser bound

    def prepare(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool | str, threads: int) -> Call:
        import openvino as ov
        from openvino import opset13 as ops

        b, h_q, t_q, d = q.shape
        h_kv, t_k = k.shape[1], k.shape[2]
        g = h_q // h_kv
        if g > 1:
            arrays = [q.reshape(b, h_kv, g, t_q, d), k[:, :, None], v[:, :, None]]
        else:
            arrays = [q, k, v]
        arrays = [np.ascontiguousarray(x) for x in arrays]
        params = [ops.parameter(list(x.shape), ov.Type.f32, name=n) for n, x in zip("qkv", arrays)]
        is_causal, masked = _square_causal(causal, t_q, t_k)
        extra = [ops.constant(allowed(t_q, t_k))] if masked else []
        node = ops.scaled_dot_product_attention(*params, *extra, causal=is_causal)
        config = {"INFERENCE_NUM_THREADS": threads}
        if self.hint:
            config["INFERENCE_PRECISION_HINT"] = self.hint
        compiled = ov.Core().compile_model(ov.Model([node.output(0)], params), "CPU", config)
        request = compiled.create_infer_request()
        for i, x in enumerate(arrays):
            request.set_input_tensor(i, ov.Tensor(x, shared_memory=True))

        def run():
            request.infer()
            return request

        def convert(req):
            return req.get_output_tensor(0).data.reshape(b, h_q, t_q, d)

        details = {"backend": "opset13.ScaledDotProductAttention, CPU plugin",
                   "layout": "(B, H_kv, G, T, d) broadcast" if g > 1 else "(B, H, T, d)",
                   "precision": compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name(),
                   "threads": int(compiled.get_property("INFERENCE_NUM_THREADS")),
                   "version": importlib.metadata.version("openvino")}
        return Call(run, convert, details, (compiled, arrays))


class Jax(Peer):
    """jax.jit(jax.nn.dot_product_attention) with its XLA CPU implementation, inputs (B, T, H, d)
    (its layout) put on the device before timing; grouped-query heads natively; bottom-right
    causal as a boolean mask. XLA's CPU client uses every core this process may run on."""
    name, modules = "jax", ("jax",)

    def prepare(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool | str, threads: int) -> Call:
        import jax
        import jax.numpy as jnp

        t_q, t_k = q.shape[2], k.shape[2]
        is_causal, masked = _square_causal(causal, t_q, t_k)
        mask = jnp.asarray(allowed(t_q, t_k)) if masked else None
        fn = jax.jit(lambda a, b_, c: jax.nn.dot_product_attention(a, b_, c, mask=mask, is_causal=is_causal,
                                                                    implementation="xla"))
        qj, kj, vj = (jax.device_put(np.ascontiguousarray(x.transpose(0, 2, 1, 3))) for x in (q, k, v))

        def run():
            return fn(qj, kj, vj).block_until_ready()

        details = {"backend": "jax.nn.dot_product_attention, implementation='xla'", "layout": "(B, T, H, d)",
                   "threads": f"XLA default ({len(jax.devices())} CPU device, Eigen pool over the process's cores)",
                   "version": importlib.metadata.version("jax"), "jaxlib": importlib.metadata.version("jaxlib"),
                   "matmul_precision": str(jax.config.jax_default_matmul_precision)}
        return Call(run, lambda out: np.asarray(out).transpose(0, 2, 1, 3), details, (qj, kj, vj))


class JitFlash(Peer):
    """attncore.jit.flash_attention at one precision ("f32", or "bf16" / "bf16_emulated": the
    bfloat16 products, timed against the float32 path like any peer). Grouped-query heads:
    called with H_q != H_kv directly when it accepts them; otherwise with the kv heads repeated
    G times (np.repeat before timing), and the details say so: it then reads G times the bytes
    of K and V."""
    modules = ("numba",)

    def __init__(self, name="jit", jit_precision="f32"):
        self.name, self.jit_precision = name, jit_precision
        self.precision = "float32" if jit_precision == "f32" else "bfloat16"

    def prepare(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool | str, threads: int) -> Call:
        import numba

        from attncore import jit

        numba.set_num_threads(threads)
        kwargs = {"causal": causal} if causal else {}
        if self.jit_precision != "f32":
            kwargs["precision"] = self.jit_precision
        details = {"backend": "attncore.jit.flash_attention", "layout": "(B, H, T, d)", "threads": threads,
                   "precision": self.jit_precision}
        if self.jit_precision == "bf16":  # tiles, vdpbf16ps or emulated, and whether vdpbf16ps pays here
            info = jit.kernel_info()
            details["products"], details["native_speedup"] = info["bf16_products"], info["bf16_native_speedup"]
        g = q.shape[1] // k.shape[1]
        if g > 1:
            kwargs["enable_gqa"] = True  # grouped-query heads are taken only when asked for
            try:
                jit.flash_attention(q, k, v, **kwargs)
                details["gqa"] = "native: called with q (B, H_q, T_q, d) and k, v (B, H_kv, T_k, d)"
            except Exception as error:
                k, v = (np.repeat(x, g, axis=1) for x in (k, v))
                details["gqa"] = (f"kv heads repeated {g} times before the call (it reads {g} x the K, V bytes): "
                                  f"direct call refused: {type(error).__name__}: {error}")

        def run():
            return jit.flash_attention(q, k, v, **kwargs)

        return Call(run, lambda out: out, details, (k, v))


PEERS = {peer.name: peer for peer in (
    JitFlash(), TorchSDPA(), OnnxRuntime(), OpenVINO("openvino_f32", "f32"), OpenVINO("openvino_default", None), Jax(),
    JitFlash("jit_bf16", "bf16"), JitFlash("jit_bf16_emulated", "bf16_emulated"),
)}
# The yardsticks of jit (float32): every row of a peer table is one of these over jit's time.
# The bfloat16 paths of jit are timed the same way, so that their row reads as the float32
# path's speed-up: jit time / bf16 time = 1 / ratio.
TITLES = {"jit": "attncore.jit", "torch": "PyTorch SDPA", "onnxruntime": "ONNX Runtime",
          "openvino_f32": "OpenVINO f32", "openvino_default": "OpenVINO default", "jax": "JAX",
          "jit_bf16": "jit bf16", "jit_bf16_emulated": "jit bf16 emulated"}  # in the order of the tables
PEER_NAMES = ("torch", "onnxruntime", "openvino_f32", "openvino_default", "jax", "jit_bf16", "jit_bf16_emulated")


def prepare(name: str, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool | str, threads: int) -> Call:
    """PEERS[name].prepare(q, k, v, causal, threads), by name: what a worker process is sent."""
    return PEERS[name].prepare(q, k, v, causal, threads)
