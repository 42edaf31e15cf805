"""Examples that use rlscan_jax; `examples.ppo` is an importable PPO trainer on gymnax."""
