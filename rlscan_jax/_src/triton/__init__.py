"""The Triton layer: fused kernels, their launchers, and the autodiff / batching wiring.

Imported only when implementation="triton" is used; it imports triton (and jax_triton on GPU).
"""
