"""rlscan_jax: RL credit assignment (GAE, V-trace, Retrace, returns, traces) as parallel scans.

Every function solves one first-order linear recurrence h_t = a_t + b_t · h_{t±1} with exact
episode boundaries, with fused Triton kernels on CUDA GPUs and pure JAX everywhere else.
"""

from rlscan_jax._src.discounted_returns import discounted_returns
from rlscan_jax._src.eligibility_traces import eligibility_traces
from rlscan_jax._src.episodic_cumsum import episodic_cumsum
from rlscan_jax._src.gae import GAEOutput, gae
from rlscan_jax._src.lambda_returns import lambda_returns
from rlscan_jax._src.linear_scan import linear_scan
from rlscan_jax._src.retrace import retrace
from rlscan_jax._src.vtrace import VTraceOutput, vtrace

__version__ = "0.1.0"

__all__ = (
    "GAEOutput",
    "VTraceOutput",
    "discounted_returns",
    "eligibility_traces",
    "episodic_cumsum",
    "gae",
    "lambda_returns",
    "linear_scan",
    "retrace",
    "vtrace",
)
