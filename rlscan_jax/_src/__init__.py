"""Private implementation of rlscan_jax. Nothing here is a public API."""
