// Search results quote each page's text, taken from the page's HTML, where a formula is
// still TeX ("\(k + 1\)"): MathJax typesets it only when the page is shown. Before a quote
// is taken, each formula is replaced by a plain reading of it: no delimiters, common
// commands as their symbols (\alpha: α, \le: ≤, \mathbb{R}: ℝ), \frac{a}{b} as a/b.
(function () {
  const SYMBOLS = {
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", Delta: "Δ", epsilon: "ε", varepsilon: "ε",
    eta: "η", theta: "θ", lambda: "λ", mu: "μ", pi: "π", sigma: "σ", Sigma: "Σ", tau: "τ",
    phi: "φ", varphi: "φ", psi: "ψ", omega: "ω", Omega: "Ω", ell: "ℓ",
    infty: "∞", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠", approx: "≈",
    equiv: "≡", propto: "∝", pm: "±", times: "×", cdot: "·", odot: "⊙", otimes: "⊗",
    cdots: "…", ldots: "…", dots: "…", vdots: "⋮", sum: "Σ", prod: "Π", int: "∫",
    in: "∈", notin: "∉", subset: "⊂", subseteq: "⊆", cup: "∪", cap: "∩", forall: "∀",
    exists: "∃", to: "→", rightarrow: "→", leftarrow: "←", Rightarrow: "⇒", mapsto: "↦",
    sqrt: "√", partial: "∂", nabla: "∇", top: "ᵀ", mid: "|", Vert: "‖", lVert: "‖",
    rVert: "‖", lfloor: "⌊", rfloor: "⌋", lceil: "⌈", rceil: "⌉", langle: "⟨", rangle: "⟩",
    quad: " ", qquad: " ", log: "log", exp: "exp", max: "max", min: "min", arg: "arg",
  };
  const BLACKBOARD = { R: "ℝ", N: "ℕ", Z: "ℤ", E: "𝔼", C: "ℂ", Q: "ℚ" };

  function readable(tex) {
    return tex
      .replace(/^\s*(?:\\\(|\\\[|\$\$?)/, "").replace(/(?:\\\)|\\\]|\$\$?)\s*$/, "")
      .replace(/\\mathbb\{(\w)\}/g, (_, letter) => BLACKBOARD[letter] || letter)
      .replace(/\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}/g, "$1/$2")
      .replace(/\\(?:begin|end)\{[a-zA-Z*]+\}/g, " ")
      .replace(/\\\\/g, "; ")
      .replace(/\\[,;:! ]/g, " ")
      .replace(/\\\{/g, "\u0001").replace(/\\\}/g, "\u0002")
      .replace(/\\([_%#$&|])/g, "$1")
      .replace(/\\([a-zA-Z]+)/g, (_, name) => SYMBOLS[name] || "")
      .replace(/&/g, "")
      .replace(/[{}]/g, "")
      .replace(/\u0001/g, "{").replace(/\u0002/g, "}")
      .replace(/\s+/g, " ")
      .trim();
  }

  function readFormulasAsText() {
    // searchtools.js (the search page only) defines Search after this script has run.
    if (typeof Search === "undefined" || typeof Search.htmlToText !== "function") return;
    const quote = Search.htmlToText;
    Search.htmlToText = function (htmlString, anchor) {
      const page = new DOMParser().parseFromString(htmlString, "text/html");
      page.querySelectorAll(".math").forEach(function (formula) {
        formula.textContent = readable(formula.textContent);
      });
      return quote(page.documentElement.outerHTML, anchor);
    };
  }

  document.addEventListener("DOMContentLoaded", readFormulasAsText);
})();
