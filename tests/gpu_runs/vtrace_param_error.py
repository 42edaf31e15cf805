# ruff: noqa: E501  (a record of one investigation; its report lines are kept whole)
"""Where the Triton float32 γ / λ gradient error of vtrace_subset_check.py's subset 4 comes from
(4096 steps × 33 rows, batch-major, mode "boot", γ 0.95, λ 0.9): the forward state h or the adjoint u?

    TRITON_INTERPRET=1 JAX_PLATFORMS=cpu python tests/gpu_runs/vtrace_param_error.py [T rows]

Same inputs, log ρ nudge and weights as vtrace_subset_check.py. The Triton launchers are called
directly (launchers/vtrace.forward with store_h, launchers/adjoint.vtrace with store_h: its float32
u, and its in-kernel γ / λ sums); associative's float32 h is vs - V and its u is
(d rewards - π g2) / ρ̄. The float64 h, u and the per-step γ / λ terms are computed here in NumPy
from the adjoint_offpolicy.py docstring's formulas, then with one float32 source substituted at a
time. Triton results are cached in /tmp (delete /tmp/vtrace_param_error_*.npz to recompute).
Outputs of 2026-12-06: 2026-12-06-cpu-interp-s42-vtrace-param-error.txt.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import cases
import jax
import jax.numpy as jnp
import numpy as np

from rlscan_jax._src import checks, episodes
from rlscan_jax._src.triton.launchers import adjoint as adj_launcher
from rlscan_jax._src.triton.launchers import vtrace as fwd_launcher

F64_REF = {"gamma": 211639559.08151248, "lambda_": 236110576.26527634}  # s41, associative in float64
S41 = {"gamma": (211644016.0, 211639360.0), "lambda_": (236115232.0, 236110400.0)}  # triton, associative f32


def setup(T, rows):
    op, batch, axis = "vtrace", (rows,), -1
    inp = cases.Case(op, cases.OTHER_MODE[op], T, batch, axis, 0.95, 0.9).build()
    lr = np.asarray(inp.args["log_rhos"], np.float32)
    inp.args["log_rhos"] = jnp.asarray(np.where(np.abs(lr) < 1e-6, np.where(lr < 0, -1e-6, 1e-6), lr))
    rng = np.random.default_rng(cases.seed_of(f"{op}-{T}-{batch}-{axis} some inputs"))
    weights = [rng.normal(size=o.shape).astype(np.float32) for o in cases.call(inp, "associative")]
    return inp, weights


def library_x_p(inp):
    """vtrace()'s own preprocessing (episodes.validate, params), as it hands x, p to the launchers."""
    a = inp.args
    ep = episodes.validate(
        "vtrace",
        rewards=a["rewards"],
        values=a["values"],
        time_axis=inp.axis,
        terminated=a.get("terminated"),
        truncated=a.get("truncated"),
        next_values=a.get("next_values"),
        bootstrap_value=a.get("bootstrap_value"),
        bootstrap=episodes.REQUIRED,
        extra={"log_rhos": a["log_rhos"]},
    )
    p = episodes.params(ep.step_shape, gamma=jnp.float32(a["gamma"]), lambda_=jnp.float32(a["lambda_"]))
    for k in ("rho_clip", "c_clip", "pg_rho_clip"):
        p[k] = checks.scalar_param(a.get(k), k)
    return ep, p


def triton_f32(inp, weights, T, rows):
    path = f"/tmp/vtrace_param_error_{T}x{rows}.npz"
    if os.path.exists(path):
        print("# Triton results from the cache", path)
        return dict(np.load(path))
    ep, p = library_x_p(inp)
    t = time.time()
    (vs, pg), h = fwd_launcher.forward(ep.x, p, axis=ep.axis, reverse=True, out_dtype=jnp.float32, store_h=True)
    vs, pg, h = (np.asarray(z) for z in (vs, pg, h))
    print(f"# Triton forward {time.time() - t:.0f}s", flush=True)
    t = time.time()
    xa = {**ep.x, "g": jnp.asarray(weights[0]), "g2": jnp.asarray(weights[1]), "h": jnp.asarray(h)}
    grads = (("rewards", jnp.float32), ("gamma", jnp.float32), ("lambda_", jnp.float32))
    out, u = adj_launcher.vtrace(xa, p, axis=ep.axis, reverse=False, out_dtype=grads, store_h=True)
    print(f"# Triton adjoint {time.time() - t:.0f}s", flush=True)
    res = dict(
        vs=vs,
        pg=pg,
        h=h,
        u=np.asarray(u),
        dr=np.asarray(out["rewards"]),
        dgam=np.asarray(out["gamma"]),
        dlam=np.asarray(out["lambda_"]),
    )
    np.savez(path, **res)
    return res


def associative_f32(inp, weights):
    vs, pg = (np.asarray(o) for o in cases.call(inp, "associative"))

    def loss(r):
        outs = cases.call(inp, "associative", {**inp.args, "rewards": r})
        return sum(jnp.sum(outs[i] * weights[i]) for i in (0, 1))

    dr = np.asarray(jax.grad(loss)(jnp.asarray(inp.args["rewards"])))
    return dict(vs=vs, pg=pg, dr=dr)


class Problem:
    """Time-major float64 NumPy copies of the inputs, [T, rows]."""

    def __init__(self, inp, weights, gamma, lam, exp32=None):
        tm = lambda z: np.asarray(z, np.float64).T
        a = inp.args
        self.r, self.v, self.lr = tm(a["rewards"]), tm(a["values"]), tm(a["log_rhos"])
        self.term = np.asarray(a["terminated"]).T.astype(bool)
        self.boot = np.asarray(a["bootstrap_value"], np.float64)
        self.g, self.g2 = tm(weights[0]), tm(weights[1])
        self.gamma, self.lam = gamma, lam
        self.rho = np.exp(self.lr) if exp32 is None else exp32(self.lr)
        self.rho_bar = np.minimum(float(a["rho_clip"]), self.rho)
        self.cmin = self.rho  # c_clip None: no clipping
        self.c = lam * self.cmin
        self.pi = np.minimum(float(a["pg_rho_clip"]), self.rho)
        T = self.r.shape[0]
        self.T = T
        self.nv = np.concatenate([self.v[1:], self.boot[None]], 0)
        done = self.term.copy()
        last = np.zeros_like(done)
        last[-1] = True
        self.cont = ~(done | last)
        self.b = gamma * self.c
        self.a = self.rho_bar * (self.r + np.where(self.term, 0.0, gamma * self.nv) - self.v)

    def h(self):
        h = np.zeros_like(self.a)
        h[-1] = self.a[-1]
        for t in range(self.T - 2, -1, -1):
            h[t] = self.a[t] + np.where(self.cont[t], self.b[t] * h[t + 1], 0.0)
        return h

    def u(self):
        e = np.where(self.cont, self.gamma * self.pi * self.g2, 0.0)
        gh = self.g.copy()
        gh[1:] += e[:-1]
        u = np.zeros_like(gh)
        u[0] = gh[0]
        for t in range(1, self.T):
            u[t] = gh[t] + np.where(self.cont[t - 1], self.b[t - 1] * u[t - 1], 0.0)
        return u

    def u_from_dr(self, dr):
        return (np.asarray(dr, np.float64).T - self.pi * self.g2) / self.rho_bar

    def terms(self, h, u):
        """Per-step d γ_t and d λ_t (the docstring of vtrace_adjoint_kernel), from h and u."""
        h1 = np.concatenate([h[1:], np.zeros_like(h[:1])], 0)
        db = np.where(self.cont, u * h1, 0.0)
        w = np.where(self.cont, np.concatenate([self.v[1:], self.boot[None]], 0) + h1, self.nv)
        dg = np.where(self.term, 0.0, self.rho_bar * u * self.nv + self.pi * self.g2 * w) + self.c * db
        dl = self.gamma * self.cmin * db
        return dg, dl


def rel(x, ref):
    return (x - ref) / abs(ref)


def main() -> None:
    T, rows = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (4096, 33)
    inp, weights = setup(T, rows)
    t0 = time.time()
    tri = triton_f32(inp, weights, T, rows)
    t = time.time()
    asc = associative_f32(inp, weights)
    print(f"# associative float32 forward + d rewards {time.time() - t:.0f}s", flush=True)

    g32, l32 = float(np.float32(0.95)), float(np.float32(0.9))
    P = Problem(inp, weights, 0.95, 0.9)  # the float64 reference's γ, λ
    P32 = Problem(inp, weights, g32, l32)  # float64 arithmetic at the float32 γ, λ the f32 runs use
    h64, u64 = P.h(), P.u()
    h64p, u64p = P32.h(), P32.u()
    tm = lambda z: np.asarray(z, np.float64).T
    v = P.v

    print("\n## 1. Checks of the float64 NumPy version")
    dg, dl = P.terms(h64, u64)
    G64, L64 = dg.sum(), dl.sum()
    print(
        f"gamma f64 numpy {G64:.6f}  associative f64 (s41) {F64_REF['gamma']:.6f}  rel {rel(G64, F64_REF['gamma']):.1e}"
    )
    print(
        f"lambda f64 numpy {L64:.6f}  associative f64 (s41) {F64_REF['lambda_']:.6f}  rel {rel(L64, F64_REF['lambda_']):.1e}"
    )
    o64 = cases.call_oracle(inp)  # float64 oracle, batch-major
    print(
        "oracle vs == V + h64: max |diff| / max |vs|", np.abs(tm(o64[0]) - (v + h64)).max() / np.abs(tm(o64[0])).max()
    )
    print(
        "Triton in-kernel sums (this run): gamma",
        float(tri["dgam"]),
        "lambda",
        float(tri["dlam"]),
        " s41 jax.grad triton:",
        S41["gamma"][0],
        S41["lambda_"][0],
    )
    for k, got in (("gamma", float(tri["dgam"])), ("lambda_", float(tri["dlam"]))):
        print(f"  {k}: in-kernel sum rel err vs f64 {rel(got, F64_REF[k]):.2e}")
    print("|h64| max", np.abs(h64).max(), " |u64| max", np.abs(u64).max(), " |V| max", np.abs(v).max())

    print("\n## 2. The γ / λ gradient from mixed sources (float64 arithmetic; rel err vs f64 at γ=0.95, λ=0.9)")
    h_tri = tm(tri["h"])
    h_tri_vs = tm(tri["vs"]) - v
    h_asc = tm(asc["vs"]) - v
    u_tri = tm(tri["u"])
    u_tri_dr = P32.u_from_dr(tri["dr"])
    u_asc = P32.u_from_dr(asc["dr"])
    print(
        "Triton u (stored) vs (dr - pi g2)/rho_bar from Triton dr: max |diff|/max|u|",
        np.abs(u_tri - u_tri_dr).max() / np.abs(u_tri).max(),
    )
    print("Triton h (stored) vs vs - V: max |diff|/max|h|", np.abs(h_tri - h_tri_vs).max() / np.abs(h_tri).max())
    combos = [
        ("h f64,          u f64          (f64 gamma, lambda)", P, h64, u64),
        ("h f64,          u f64          (f32-rounded gamma, lambda)", P32, h64p, u64p),
        ("h Triton f32,   u f64", P32, h_tri, u64p),
        ("h f64,          u Triton f32", P32, h64p, u_tri),
        ("h Triton f32,   u Triton f32", P32, h_tri, u_tri),
        ("h assoc f32,    u f64", P32, h_asc, u64p),
        ("h f64,          u assoc f32", P32, h64p, u_asc),
        ("h assoc f32,    u assoc f32", P32, h_asc, u_asc),
        ("h Triton f32,   u assoc f32", P32, h_tri, u_asc),
        ("h assoc f32,    u Triton f32", P32, h_asc, u_tri),
    ]
    G64p, L64p = (z.sum() for z in P32.terms(h64p, u64p))
    print("  (rel: vs f64 at γ=0.95, λ=0.9 as the test compares;  rel32: vs f64 at the float32-rounded γ, λ)")
    for name, Q, h, u in combos:
        a, b = (z.sum() for z in Q.terms(h, u))
        print(
            f"  {name}: gamma {a:.3f} rel {rel(a, G64):+.2e} rel32 {rel(a, G64p):+.2e}"
            f"   lambda {b:.3f} rel {rel(b, L64):+.2e} rel32 {rel(b, L64p):+.2e}"
        )

    print("\n## 3. Cancellation in the sums")
    dgp, dlp = P32.terms(h64p, u64p)
    for k, z in (("gamma", dgp), ("lambda", dlp)):
        print(
            f"  {k}: sum|terms| / |sum| = {np.abs(z).sum() / abs(z.sum()):.3f};  max|term| / |sum| = {np.abs(z).max() / abs(z.sum()):.3f}"
        )
    print(
        "  gamma share of |sum| from the c_t db_t (u h_{t+1}) part:",
        f"{(P32.c * np.where(P32.cont, u64p * np.concatenate([h64p[1:], h64p[:1] * 0]), 0)).sum() / dgp.sum():.6f}",
    )
    per_row = dgp.sum(0)
    order = np.argsort(-np.abs(per_row))
    print(
        "  per-row share of the gamma sum, largest rows:",
        ", ".join(f"row {i}: {per_row[i] / dgp.sum():.4f}" for i in order[:5]),
    )

    print("\n## 4. The elementwise error of h (vs): Triton f32 and associative f32 vs f64 (at the f32 γ, λ)")
    for name, h in (("Triton", h_tri), ("assoc", h_asc)):
        e = h - h64p
        r = e / np.maximum(np.abs(h64p), 1e-30)
        big = np.abs(h64p) > 1e-3 * np.abs(h64p).max()
        print(
            f"  {name}: max|err|/max|h| {np.abs(e).max() / np.abs(h64p).max():.2e};  |rel err| median {np.median(np.abs(r)):.2e},"
            f" 99.9% {np.quantile(np.abs(r), 0.999):.2e};  where |h| > 1e-3 max|h| ({big.sum()} steps): mean signed rel err"
            f" {r[big].mean():+.2e}, mean |rel err| {np.abs(r[big]).mean():.2e}, |h|-weighted signed {np.sum(e[big]) / np.sum(np.abs(h64p[big])):+.2e}"
        )
    for name, u in (("Triton", u_tri), ("assoc", u_asc)):
        e = u - u64p
        r = e / np.maximum(np.abs(u64p), 1e-30)
        big = np.abs(u64p) > 1e-3 * np.abs(u64p).max()
        print(
            f"  u {name}: max|err|/max|u| {np.abs(e).max() / np.abs(u64p).max():.2e};  where |u| > 1e-3 max|u| ({big.sum()} steps):"
            f" mean signed rel err {r[big].mean():+.2e}, mean |rel err| {np.abs(r[big]).mean():.2e}"
        )

    print(
        "\n## 5. Where the gamma-gradient error of Triton's h concentrates (Δ_t = term(h Triton, u f64) - term(h f64, u f64))"
    )
    dg_t, _ = P32.terms(h_tri, u64p)
    dg_a, _ = P32.terms(h_asc, u64p)
    for name, dd in (("Triton", dg_t - dgp), ("assoc", dg_a - dgp)):
        tot = dd.sum()
        flat = np.sort(np.abs(dd).ravel())[::-1]
        print(
            f"  {name}: total Δ {tot:+.5g} (rel {tot / dgp.sum():+.2e}); sum|Δ_t| {np.abs(dd).sum():.5g};"
            f" |Δ| share of the largest 10 / 100 / 1000 steps: {flat[:10].sum() / flat.sum():.3f} / {flat[:100].sum() / flat.sum():.3f} / {flat[:1000].sum() / flat.sum():.3f}"
        )
        rs = dd.sum(0)
        o = np.argsort(-np.abs(rs))
        print("    by row:", ", ".join(f"row {i}: {rs[i]:+.5g}" for i in o[:5]))
        sel = {
            "t = 0": np.s_[0:1],
            "t = T-1": np.s_[T - 1 : T],
        }
        for k, s in sel.items():
            print(f"    Δ at {k}: {dd[s].sum():+.3e}")
        print(
            f"    Δ at terminated steps: {dd[P32.term].sum():+.3e};  at the step before a terminated step:"
            f" {dd[:-1][P32.term[1:]].sum():+.3e};  elsewhere: {dd[~P32.term].sum():+.3e}"
        )
    # Steps to the episode's end (or the window's) for the steps carrying the error.
    end = np.zeros_like(P32.term, dtype=np.int64)
    nxt = np.full(rows, T - 1)
    for t in range(T - 1, -1, -1):
        nxt = np.where(P32.term[t], t, nxt)
        end[t] = nxt - t
    dd = dg_t - dgp
    w = np.abs(dd)
    print(
        f"  Triton: |Δ|-weighted mean steps to the episode's end {np.sum(w * end) / w.sum():.1f}  (all steps: {end.mean():.1f});"
        f" |term|-weighted: {np.sum(np.abs(dgp) * end) / np.abs(dgp).sum():.1f}"
    )

    print("\n## 6. The largest-|h| stretch: relative error of h along it")
    r0 = int(np.unravel_index(np.argmax(np.abs(h64p)), h64p.shape)[1])
    t0_ = int(np.argmax(np.abs(h64p[:, r0])))
    print(f"  row {r0}, peak at t={t0_}, h64 {h64p[t0_, r0]:.6e}, steps to episode end {end[t0_, r0]}")
    Pn6 = Problem(inp, weights, g32, l32, exp32=lambda x: np.exp(np.float32(x)).astype(np.float64))
    hn6, un6 = Pn6.h(), Pn6.u()
    print(
        "    (rel err: vs f64 at the f32 γ, λ; 'own': Triton vs f64 scans of its own rounded inputs, ρ from NumPy's f32 exp)"
    )
    for tt in range(t0_ - 10, min(T, t0_ + 135), 8):
        print(
            f"    t={tt:5d} h64 {h64p[tt, r0]:+.6e}  rel err Triton {rel(h_tri[tt, r0], h64p[tt, r0]):+.2e}"
            f" (own {rel(h_tri[tt, r0], hn6[tt, r0]):+.2e})  assoc {rel(h_asc[tt, r0], h64p[tt, r0]):+.2e}"
            f"   u64 {u64p[tt, r0]:+.4e} rel err Triton {rel(u_tri[tt, r0], u64p[tt, r0]):+.2e}"
            f" (own {rel(u_tri[tt, r0], un6[tt, r0]):+.2e})  assoc {rel(u_asc[tt, r0], u64p[tt, r0]):+.2e}"
        )

    print("\n## 7. ρ = exp(log ρ) in float32: Triton interpreter (NumPy float32 exp) vs XLA CPU vs exact")
    lr32 = np.asarray(inp.args["log_rhos"], np.float32)
    ex = np.exp(lr32.astype(np.float64))
    rn = np.exp(lr32).astype(np.float64)  # NumPy float32 exp (the interpreter's tl.exp)
    rj = np.asarray(jnp.exp(jnp.asarray(lr32))).astype(np.float64)  # XLA's
    rr = np.float32(ex).astype(np.float64)  # correctly rounded
    for name, z in (("numpy f32 exp", rn), ("XLA f32 exp", rj), ("rounded f64 exp", rr)):
        e = (z - ex) / ex
        print(
            f"  {name}: mean rel err {e.mean():+.3e}, mean |rel err| {np.abs(e).mean():.3e}, max {np.abs(e).max():.3e}"
        )
    for name, f in (
        ("numpy f32 exp", lambda x: np.exp(np.float32(x)).astype(np.float64)),
        ("XLA f32 exp", lambda x: np.asarray(jnp.exp(jnp.asarray(np.float32(x)))).astype(np.float64)),
        ("rounded f64 exp", lambda x: np.float32(np.exp(x)).astype(np.float64)),
    ):
        Q = Problem(inp, weights, g32, l32, exp32=f)
        a, b = Q.terms(Q.h(), Q.u())
        print(
            f"  f64 scans with ρ from {name}: gamma rel {rel(a.sum(), G64):+.2e}, lambda rel {rel(b.sum(), L64):+.2e}"
        )
    print("\n## 8. Input rounding vs scan arithmetic")
    print("  (a) the test's reference uses γ = 0.95, λ = 0.9 exactly; the float32 runs use their float32 roundings:")
    for name, gg, ll in (("γ rounded only", g32, 0.9), ("λ rounded only", 0.95, l32), ("both", g32, l32)):
        Q = Problem(inp, weights, gg, ll)
        a, b = (z.sum() for z in Q.terms(Q.h(), Q.u()))
        print(f"    f64 scans, {name}: gamma rel {rel(a, G64):+.2e}, lambda rel {rel(b, L64):+.2e}")
    print("  (b) substitutions against the exact-parameter f64 state (P: γ=0.95, λ=0.9 in h, u and the terms):")
    for name, h, u in (
        ("h Triton f32, u f64(0.95, 0.9)", h_tri, u64),
        ("h f64(0.95, 0.9), u Triton f32", h64, u_tri),
        ("h assoc f32, u f64(0.95, 0.9)", h_asc, u64),
        ("h f64(0.95, 0.9), u assoc f32", h64, u_asc),
    ):
        a, b = (z.sum() for z in P.terms(h, u))
        print(f"    {name}: gamma rel {rel(a, G64):+.2e}, lambda rel {rel(b, L64):+.2e}")
    print("  (c) each float32 run against f64 scans of its own rounded inputs (f32 γ, λ and ρ from the same exp):")
    Pn = Problem(inp, weights, g32, l32, exp32=lambda x: np.exp(np.float32(x)).astype(np.float64))
    Px = Problem(
        inp, weights, g32, l32, exp32=lambda x: np.asarray(jnp.exp(jnp.asarray(np.float32(x)))).astype(np.float64)
    )
    for name, Q, h, u in (("Triton (interpreter: NumPy exp)", Pn, h_tri, u_tri), ("assoc (XLA exp)", Px, h_asc, u_asc)):
        hq, uq = Q.h(), Q.u()
        Gq, Lq = (z.sum() for z in Q.terms(hq, uq))
        for sub, hh, uu in (("h and u", h, u), ("h only", h, uq), ("u only", hq, u)):
            a, b = (z.sum() for z in Q.terms(hh, uu))
            print(f"    {name}, f32 {sub}: gamma rel {rel(a, Gq):+.2e}, lambda rel {rel(b, Lq):+.2e}")
        big = np.abs(hq) > 1e-3 * np.abs(hq).max()
        eh = h - hq
        bigu = np.abs(uq) > 1e-3 * np.abs(uq).max()
        print(
            f"      its h vs own-input f64: max|err|/max|h| {np.abs(eh).max() / np.abs(hq).max():.2e}, |h|-weighted signed rel err"
            f" (|h| > 1e-3 max) {eh[big].sum() / np.abs(hq[big]).sum():+.2e};  u: max|err|/max|u|"
            f" {np.abs(u - uq).max() / np.abs(uq).max():.2e}, |u|-weighted signed {(u - uq)[bigu].sum() / np.abs(uq[bigu]).sum():+.2e}"
        )
        print(f"      own-input f64 vs exact-input f64: gamma rel {rel(Gq, G64):+.2e}")
    print(
        "  (d) conditioning: f64 scans with ρ_t × (1 + ε_t), ε_t ~ N(0, σ²) independent (float32 rounding is σ ≈ 3.5e-8):"
    )
    rng = np.random.default_rng(0)
    for sigma in (3.5e-8,):
        rs = []
        for _ in range(8):
            noise = 1 + sigma * rng.standard_normal(P.lr.shape)
            Q = Problem(inp, weights, g32, l32, exp32=lambda x, n=noise: np.exp(x) * n)
            rs.append(rel(Q.terms(Q.h(), Q.u())[0].sum(), G64p))
        print(
            f"    σ {sigma:.1e}: gamma rel vs f64 at f32 γ, λ over 8 draws: mean {np.mean(rs):+.2e}, std {np.std(rs):.2e}, max |.| {np.max(np.abs(rs)):.2e}"
        )
    Q = Problem(inp, weights, g32 * (1 + 1e-7), l32)
    print(
        f"    γ × (1 + 1e-7): gamma rel {rel(Q.terms(Q.h(), Q.u())[0].sum(), G64p):+.2e}  (relative condition number in γ ≈"
        f" {rel(Q.terms(Q.h(), Q.u())[0].sum(), G64p) / 1e-7:.0f})"
    )
    # The steps of row 0 (the one carrying ~100 % of the sum): where |u h| is large.
    uh = np.abs(u64p[:, 0] * np.concatenate([h64p[1:, 0], [0.0]]))
    idx = np.where(uh > 1e-3 * uh.max())[0]
    print(
        f"    row 0: |u_t h_(t+1)| > 1e-3 max at {idx.size} steps, t in [{idx.min()}, {idx.max()}]; peak |h| at t={int(np.argmax(np.abs(h64p[:, 0])))},"
        f" peak |u| at t={int(np.argmax(np.abs(u64p[:, 0])))}; row 0 has no episode end ({int(P.term[:, 0].sum())} terminated steps)"
    )
    print(f"\n# total {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
