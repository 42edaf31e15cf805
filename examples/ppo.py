"""PPO on gymnax, fully jitted, with advantages from `rlscan_jax.gae`.

A single-file trainer in the PureJaxRL style: environments are vmapped, a rollout is a
`lax.scan`, the learner runs minibatch epochs under `lax.scan`, and a whole update (rollout,
GAE, epochs) is one jitted function. The command line runs jitted chunks of updates in a
Python loop so that progress can be printed; `make_train` gives the single-`jax.jit` version.

    python examples/ppo.py                                      # CartPole-v1 to a return of 500
    python examples/ppo.py --total-timesteps 20000 --no-plot    # smoke run (CI, notebooks)
    python examples/ppo.py --env Acrobot-v1 --implementation associative

With the defaults (1M steps, 8 environments) CartPole-v1 reaches a mean return of 500 in under
a minute on a 2-core CPU, compilation included; the smoke run is dominated by compilation.

Terminated vs truncated. gymnax (>= 1.0) `env.step` returns
`(obs, state, reward, terminated, truncated, info)` and resets an environment automatically
when `terminated | truncated`, so the `obs` it returns after the last step of an episode is the
first observation of the next one. The state actually reached is in `info["final_observation"]`
(the observation before the auto-reset; equal to `obs` on every other step). `terminated` is
the environment's own terminal condition (pole fell, goal reached); `truncated` is the time
limit, `state.time >= params.max_steps_in_episode`, computed by gymnax on the stepped state
independently of `terminated` (both can be true on the same step; termination then wins).

The trainer passes all three to `rlscan_jax.gae`:

    next_values[t] = V(final_observation[t])        for every step t
    δ_t = r_t + γ (1 - terminated_t) next_values_t - V(s_t)
    A_t = δ_t + γ λ (1 - (terminated_t | truncated_t)) A_{t+1}

so a time-limit cut bootstraps from the value of the state the agent really reached (treating
it as terminal would teach the critic that the 500th CartPole step is worth nothing), while a
real termination bootstraps nothing, and no credit crosses an episode boundary either way.
Because `next_values` is given for every step, no separate `bootstrap_value` is needed for
the last step of the rollout window.

"Mean episodic return" is the undiscounted return of episodes that finished in training
(exploring, stochastic policy), averaged over every episode that ended within a window of
updates; the final figure uses the last `final_window` fraction of all updates.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import optax
from gymnax.environments import spaces

try:
    import rlscan_jax
except ImportError:  # a source checkout run as `python examples/ppo.py` without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import rlscan_jax

Params = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """Hyperparameters of a PPO run. Frozen and hashable, so it can be a static argument."""

    env_name: str = "CartPole-v1"
    num_envs: int = 8
    num_steps: int = 128
    total_timesteps: int = 1_000_000
    update_epochs: int = 4
    num_minibatches: int = 4
    learning_rate: float = 1e-3
    anneal_lr: bool = True
    max_grad_norm: float = 0.5
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    normalize_advantages: bool = True
    hidden_size: int = 64
    num_layers: int = 2
    seed: int = 0
    implementation: str | None = None
    log_every: int = 50
    final_window: float = 0.1

    @property
    def batch_size(self) -> int:
        """Transitions collected per update: num_envs · num_steps."""
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        """Transitions per gradient step."""
        return self.batch_size // self.num_minibatches

    @property
    def num_updates(self) -> int:
        """Number of rollout + learning updates: total_timesteps // batch_size (at least 1)."""
        return max(1, self.total_timesteps // self.batch_size)

    def validate(self) -> None:
        """Raises `ValueError` for a configuration the trainer cannot run."""
        for name in ("num_envs", "num_steps", "update_epochs", "num_minibatches", "hidden_size", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be at least 1")
        if self.batch_size % self.num_minibatches:
            raise ValueError(
                f"num_envs * num_steps = {self.batch_size} must be divisible by num_minibatches={self.num_minibatches}"
            )
        if not 0.0 < self.final_window <= 1.0:
            raise ValueError(f"final_window={self.final_window} must be in (0, 1]")


class RunnerState(NamedTuple):
    """Everything carried from one update to the next."""

    params: Params
    opt_state: optax.OptState
    env_state: Any  # gymnax EnvState, batched over [N]
    obs: jax.Array  # [N, *obs_shape], the observation the next action is taken from
    episode_return: jax.Array  # [N], undiscounted return of the running episode so far
    episode_length: jax.Array  # [N]
    key: jax.Array


class Trajectory(NamedTuple):
    """One rollout window, time-major [T, N, ...]."""

    obs: jax.Array  # [T, N, *obs_shape]
    action: jax.Array  # [T, N]
    log_prob: jax.Array  # [T, N]
    value: jax.Array  # [T, N], V(obs_t) under the behaviour parameters
    reward: jax.Array  # [T, N]
    terminated: jax.Array  # [T, N] bool
    truncated: jax.Array  # [T, N] bool
    next_obs: jax.Array  # [T, N, *obs_shape], the true next observation (before any auto-reset)
    finished_return: jax.Array  # [T, N], the episode's return where it ended at t, else 0
    finished_length: jax.Array  # [T, N]


class UpdateMetrics(NamedTuple):
    """Scalars reported by one update."""

    episode_return_sum: jax.Array  # sum of returns of the episodes that ended in this rollout
    episode_length_sum: jax.Array
    episode_count: jax.Array
    total_loss: jax.Array
    policy_loss: jax.Array
    value_loss: jax.Array
    entropy: jax.Array
    approx_kl: jax.Array
    clip_fraction: jax.Array


class PPOFunctions(NamedTuple):
    """The pure, jittable pieces of a PPO update, for reuse and for timing each part.

    `update(state) == learn(state', traj, advantages(state'.params, traj))` with
    `(state', traj) = rollout(state)`.
    """

    init: Callable[[jax.Array], RunnerState]
    rollout: Callable[[RunnerState], tuple[RunnerState, Trajectory]]
    advantages: Callable[[Params, Trajectory], rlscan_jax.GAEOutput]
    learn: Callable[[RunnerState, Trajectory, rlscan_jax.GAEOutput], tuple[RunnerState, UpdateMetrics]]
    update: Callable[[RunnerState], tuple[RunnerState, UpdateMetrics]]


class TrainResult(NamedTuple):
    """What `train` returns: the final state, per-update metrics as NumPy arrays and timings."""

    state: RunnerState
    metrics: UpdateMetrics  # each field [num_updates]
    env_steps: np.ndarray  # [num_updates], environment steps taken after each update
    final_mean_return: float
    final_episode_count: int
    compile_seconds: float
    train_seconds: float


# ----------------------------------------------------------------------------------------------
# Environment and network


def check_implementation(implementation: str | None) -> None:
    """Raises `ValueError` now, not deep inside a jit trace, if `rlscan_jax.gae` cannot use `implementation`."""
    x = jax.ShapeDtypeStruct((2,), jnp.float32)
    jax.eval_shape(lambda r, v: rlscan_jax.gae(r, v, bootstrap_value=v[0], implementation=implementation), x, x)


def make_env(config: PPOConfig) -> tuple[Any, Any]:
    """The gymnax environment and its default parameters; raises for unsupported action spaces."""
    env, env_params = gymnax.make(config.env_name)
    if not isinstance(env.action_space(env_params), spaces.Discrete):
        raise ValueError(f"env={config.env_name!r}: this trainer supports discrete action spaces only")
    return env, env_params


def _dense_init(key: jax.Array, n_in: int, n_out: int, scale: float) -> tuple[jax.Array, jax.Array]:
    w = jax.nn.initializers.orthogonal(scale)(key, (n_in, n_out), jnp.float32)
    return w, jnp.zeros((n_out,), jnp.float32)


def _mlp_init(key: jax.Array, sizes: list[int], head_scale: float) -> list[tuple[jax.Array, jax.Array]]:
    keys = jax.random.split(key, len(sizes) - 1)
    layers = []
    for i, (k, n_in, n_out) in enumerate(zip(keys, sizes[:-1], sizes[1:], strict=True)):
        last = i == len(sizes) - 2
        layers.append(_dense_init(k, n_in, n_out, head_scale if last else math.sqrt(2.0)))
    return layers


def _mlp_apply(layers: list[tuple[jax.Array, jax.Array]], x: jax.Array) -> jax.Array:
    for w, b in layers[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = layers[-1]
    return x @ w + b


def init_params(key: jax.Array, obs_size: int, num_actions: int, config: PPOConfig) -> Params:
    """Separate actor and critic MLPs (tanh, orthogonal init; small policy head, unit value head)."""
    k_actor, k_critic = jax.random.split(key)
    hidden = [config.hidden_size] * config.num_layers
    return {
        "actor": _mlp_init(k_actor, [obs_size, *hidden, num_actions], head_scale=0.01),
        "critic": _mlp_init(k_critic, [obs_size, *hidden, 1], head_scale=1.0),
    }


def policy_logits(params: Params, obs: jax.Array, obs_ndim: int) -> jax.Array:
    """Action logits [*B, A] for observations [*B, *obs_shape]."""
    x = obs.reshape(*obs.shape[: obs.ndim - obs_ndim], -1).astype(jnp.float32)
    return _mlp_apply(params["actor"], x)


def value_fn(params: Params, obs: jax.Array, obs_ndim: int) -> jax.Array:
    """State values [*B] for observations [*B, *obs_shape]."""
    x = obs.reshape(*obs.shape[: obs.ndim - obs_ndim], -1).astype(jnp.float32)
    return _mlp_apply(params["critic"], x)[..., 0]


# ----------------------------------------------------------------------------------------------
# The update


def make_ppo(config: PPOConfig) -> PPOFunctions:
    """Builds the pure functions of a PPO update for `config` (nothing is jitted here).

    Args:
      config: the run's hyperparameters; `config.implementation` is passed to `rlscan_jax.gae`.

    Returns:
      PPOFunctions(init, rollout, advantages, learn, update), each pure and jittable.

    Raises:
      ValueError: an invalid configuration or an environment with a non-discrete action space.
    """
    config.validate()
    check_implementation(config.implementation)
    env, env_params = make_env(config)
    obs_shape = env.observation_space(env_params).shape
    obs_ndim = len(obs_shape)
    obs_size = math.prod(obs_shape)
    num_actions = env.action_space(env_params).n
    n_env, n_mb = config.num_envs, config.num_minibatches
    grad_steps = config.num_updates * config.update_epochs * n_mb

    if config.anneal_lr:
        lr: float | optax.Schedule = optax.linear_schedule(config.learning_rate, 0.0, grad_steps)
    else:
        lr = config.learning_rate
    optimizer = optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(lr, eps=1e-5))

    v_reset = jax.vmap(env.reset, in_axes=(0, None))
    v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def init(key: jax.Array) -> RunnerState:
        key, k_params, k_reset = jax.random.split(key, 3)
        params = init_params(k_params, obs_size, num_actions, config)
        obs, env_state = v_reset(jax.random.split(k_reset, n_env), env_params)
        zeros = jnp.zeros((n_env,), jnp.float32)
        return RunnerState(params, optimizer.init(params), env_state, obs, zeros, zeros, key)

    def env_step(state: RunnerState, _: None) -> tuple[RunnerState, Trajectory]:
        key, k_act, k_env = jax.random.split(state.key, 3)
        logits = policy_logits(state.params, state.obs, obs_ndim)
        value = value_fn(state.params, state.obs, obs_ndim)
        action = jax.random.categorical(k_act, logits)
        log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], axis=-1)[:, 0]
        out = v_step(jax.random.split(k_env, n_env), state.env_state, action, env_params)
        if len(out) != 6:
            raise RuntimeError("this trainer needs gymnax >= 1.0 (env.step returning terminated and truncated)")
        obs, env_state, reward, terminated, truncated, info = out
        reward = reward.astype(jnp.float32)
        terminated, truncated = terminated.astype(bool), truncated.astype(bool)
        done = terminated | truncated
        ep_return = state.episode_return + reward
        ep_length = state.episode_length + 1.0
        traj = Trajectory(
            obs=state.obs,
            action=action,
            log_prob=log_prob,
            value=value,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            next_obs=info["final_observation"],
            finished_return=jnp.where(done, ep_return, 0.0),
            finished_length=jnp.where(done, ep_length, 0.0),
        )
        state = state._replace(
            env_state=env_state,
            obs=obs,
            episode_return=jnp.where(done, 0.0, ep_return),
            episode_length=jnp.where(done, 0.0, ep_length),
            key=key,
        )
        return state, traj

    def rollout(state: RunnerState) -> tuple[RunnerState, Trajectory]:
        return jax.lax.scan(env_step, state, None, length=config.num_steps)

    def advantages(params: Params, traj: Trajectory) -> rlscan_jax.GAEOutput:
        next_values = value_fn(params, traj.next_obs, obs_ndim)  # [T, N], V of the true next state
        return rlscan_jax.gae(
            traj.reward,
            traj.value,
            terminated=traj.terminated,
            truncated=traj.truncated,
            next_values=next_values,
            gamma=config.gamma,
            lambda_=config.gae_lambda,
            implementation=config.implementation,
        )

    def loss_fn(params: Params, batch: tuple[Trajectory, rlscan_jax.GAEOutput]) -> tuple[jax.Array, tuple]:
        traj, gae_out = batch
        logits = policy_logits(params, traj.obs, obs_ndim)
        log_probs = jax.nn.log_softmax(logits)
        log_prob = jnp.take_along_axis(log_probs, traj.action[:, None], axis=-1)[:, 0]
        entropy = -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1).mean()

        value = value_fn(params, traj.obs, obs_ndim)
        value_clipped = traj.value + jnp.clip(value - traj.value, -config.clip_eps, config.clip_eps)
        value_loss = 0.5 * jnp.maximum((value - gae_out.returns) ** 2, (value_clipped - gae_out.returns) ** 2).mean()

        adv = gae_out.advantages
        if config.normalize_advantages:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        log_ratio = log_prob - traj.log_prob
        ratio = jnp.exp(log_ratio)
        surrogate = jnp.minimum(ratio * adv, jnp.clip(ratio, 1.0 - config.clip_eps, 1.0 + config.clip_eps) * adv)
        policy_loss = -surrogate.mean()

        total = policy_loss + config.vf_coef * value_loss - config.ent_coef * entropy
        approx_kl = ((ratio - 1.0) - log_ratio).mean()
        clip_fraction = (jnp.abs(ratio - 1.0) > config.clip_eps).mean()
        return total, (policy_loss, value_loss, entropy, approx_kl, clip_fraction)

    def learn(state: RunnerState, traj: Trajectory, gae_out: rlscan_jax.GAEOutput) -> tuple[RunnerState, UpdateMetrics]:
        # Flatten [T, N] into one batch axis; the learner sees transitions, not sequences.
        flat = jax.tree.map(lambda x: x.reshape(config.batch_size, *x.shape[2:]), (traj, gae_out))

        def minibatch_step(carry: tuple[Params, optax.OptState], batch: Any) -> tuple[tuple, tuple]:
            params, opt_state = carry
            (total, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), (total, *aux)

        def epoch(carry: tuple[Params, optax.OptState, jax.Array], _: None) -> tuple[tuple, tuple]:
            params, opt_state, key = carry
            key, k_perm = jax.random.split(key)
            perm = jax.random.permutation(k_perm, config.batch_size)
            batches = jax.tree.map(lambda x: x[perm].reshape(n_mb, config.minibatch_size, *x.shape[1:]), flat)
            (params, opt_state), losses = jax.lax.scan(minibatch_step, (params, opt_state), batches)
            return (params, opt_state, key), losses

        key, k_learn = jax.random.split(state.key)
        (params, opt_state, _), losses = jax.lax.scan(
            epoch, (state.params, state.opt_state, k_learn), None, length=config.update_epochs
        )
        total, policy_loss, value_loss, entropy, approx_kl, clip_fraction = (x.mean() for x in losses)
        done = traj.terminated | traj.truncated
        metrics = UpdateMetrics(
            episode_return_sum=traj.finished_return.sum(),
            episode_length_sum=traj.finished_length.sum(),
            episode_count=done.sum().astype(jnp.float32),
            total_loss=total,
            policy_loss=policy_loss,
            value_loss=value_loss,
            entropy=entropy,
            approx_kl=approx_kl,
            clip_fraction=clip_fraction,
        )
        return state._replace(params=params, opt_state=opt_state, key=key), metrics

    def update(state: RunnerState) -> tuple[RunnerState, UpdateMetrics]:
        state, traj = rollout(state)
        return learn(state, traj, advantages(state.params, traj))

    return PPOFunctions(init, rollout, advantages, learn, update)


def make_update_step(config: PPOConfig) -> tuple[Callable[[jax.Array], RunnerState], Callable]:
    """A jitted `init(key) -> RunnerState` and a jitted single update `step(state) -> (state, metrics)`.

    One call of `step` is a rollout of `num_steps` in `num_envs` environments, `rlscan_jax.gae`
    over it, and `update_epochs` epochs of `num_minibatches` gradient steps. Use
    `make_ppo(config).advantages` to time the estimator alone on the same trajectory.
    """
    fns = make_ppo(config)
    return jax.jit(fns.init), jax.jit(fns.update)


def make_train(config: PPOConfig) -> Callable[[jax.Array], tuple[RunnerState, UpdateMetrics]]:
    """A pure `train(key) -> (final_state, metrics)` running all updates under one `lax.scan`.

    Wrap it in `jax.jit` (or `jax.jit(jax.vmap(train))` over keys for several seeds): the whole
    run is then a single compiled program. Each field of `metrics` is [num_updates].
    """
    fns = make_ppo(config)

    def train(key: jax.Array) -> tuple[RunnerState, UpdateMetrics]:
        return jax.lax.scan(lambda s, _: fns.update(s), fns.init(key), None, length=config.num_updates)

    return train


def windowed_mean_return(metrics: UpdateMetrics, first: int, last: int) -> tuple[float, int]:
    """Mean return of all episodes that ended in updates [first, last), and their count (nan if none)."""
    count = int(np.sum(metrics.episode_count[first:last]))
    total = float(np.sum(metrics.episode_return_sum[first:last]))
    return (total / count if count else float("nan")), count


def train(config: PPOConfig, log: Callable[[str], None] | None = print) -> TrainResult:
    """Runs PPO for `config.num_updates` updates, in jitted chunks of `log_every` updates.

    Compilation happens once, ahead of time, and is timed separately. After each chunk, `log`
    (if not None) gets a progress line: updates, environment steps, steps per second and the
    mean return of the episodes that ended during the chunk.

    Args:
      config: hyperparameters.
      log: where progress lines go; None for silence.

    Returns:
      TrainResult with the final state and per-update metrics. `final_mean_return` is the mean
      return of all episodes that ended in the last `ceil(final_window · num_updates)` updates.
    """
    fns = make_ppo(config)
    chunk = min(config.log_every, config.num_updates)

    def run_chunk(state: RunnerState, n: jax.Array) -> tuple[RunnerState, UpdateMetrics]:
        shapes = jax.eval_shape(fns.update, state)[1]
        buffer = jax.tree.map(lambda s: jnp.zeros((chunk, *s.shape), s.dtype), shapes)

        def body(i: jax.Array, carry: tuple[RunnerState, UpdateMetrics]) -> tuple[RunnerState, UpdateMetrics]:
            state, buffer = carry
            state, m = fns.update(state)
            return state, jax.tree.map(lambda b, x: b.at[i].set(x), buffer, m)

        return jax.lax.fori_loop(0, n, body, (state, buffer))

    t0 = time.perf_counter()
    state = jax.jit(fns.init)(jax.random.key(config.seed))
    run = jax.jit(run_chunk).lower(state, jnp.int32(chunk)).compile()
    compile_seconds = time.perf_counter() - t0
    if log:
        log(
            f"PPO on {config.env_name}: {config.num_updates} updates of {config.num_envs} envs x "
            f"{config.num_steps} steps, gae implementation={config.implementation!r}; "
            f"compiled in {compile_seconds:.1f} s"
        )

    chunks: list[UpdateMetrics] = []
    done_updates = 0
    t_start = time.perf_counter()
    while done_updates < config.num_updates:
        n = min(chunk, config.num_updates - done_updates)
        t_chunk = time.perf_counter()
        state, m = run(state, jnp.int32(n))
        m = jax.tree.map(lambda x, n=n: np.asarray(x)[:n], m)
        elapsed = time.perf_counter() - t_chunk
        chunks.append(m)
        done_updates += n
        if log:
            mean_ret, count = windowed_mean_return(m, 0, n)
            log(
                f"update {done_updates:5d}/{config.num_updates} | steps {done_updates * config.batch_size:9d} | "
                f"{n * config.batch_size / elapsed:9.0f} steps/s | mean return {mean_ret:7.1f} ({count} episodes) | "
                f"entropy {m.entropy.mean():.3f}"
            )
    train_seconds = time.perf_counter() - t_start

    metrics = jax.tree.map(lambda *xs: np.concatenate(xs), *chunks)
    window = max(1, math.ceil(config.final_window * config.num_updates))
    final_mean, final_count = windowed_mean_return(metrics, config.num_updates - window, config.num_updates)
    env_steps = np.arange(1, config.num_updates + 1) * config.batch_size
    return TrainResult(state, metrics, env_steps, final_mean, final_count, compile_seconds, train_seconds)


def plot_learning_curve(result: TrainResult, config: PPOConfig, path: str | Path) -> None:
    """Saves the mean episodic return per logging chunk against environment steps as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m, n = result.metrics, len(result.env_steps)
    width = max(1, n // 40)
    xs, ys = [], []
    for start in range(0, n, width):
        mean, count = windowed_mean_return(m, start, min(start + width, n))
        if count:
            xs.append(result.env_steps[min(start + width, n) - 1])
            ys.append(mean)
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    ax.plot(xs, ys, marker=".", label=f"episodes ending in each window of {width} updates")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean episodic return")
    ax.legend(loc="lower right")
    ax.set_title(f"PPO on {config.env_name}, seed {config.seed}: final {result.final_mean_return:.1f}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ----------------------------------------------------------------------------------------------
# Command line


def _parse_args(argv: list[str] | None) -> tuple[PPOConfig, Path | None]:
    d = PPOConfig()
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--env", default=d.env_name, help="gymnax environment id with discrete actions")
    p.add_argument("--num-envs", type=int, default=d.num_envs, help="parallel (vmapped) environments")
    p.add_argument("--num-steps", type=int, default=d.num_steps, help="rollout length per update")
    p.add_argument(
        "--total-timesteps", type=int, default=d.total_timesteps, help="environment steps in all; 20000 for a smoke run"
    )
    p.add_argument("--seed", type=int, default=d.seed, help="PRNG seed")
    p.add_argument(
        "--implementation",
        default="none",
        choices=["none", "associative", "sequential", "triton"],
        help="rlscan_jax.gae implementation; none picks the fastest for the backend",
    )
    p.add_argument("--update-epochs", type=int, default=d.update_epochs, help="passes over each rollout")
    p.add_argument("--num-minibatches", type=int, default=d.num_minibatches, help="minibatches per epoch")
    p.add_argument("--lr", type=float, default=d.learning_rate, help="Adam learning rate (annealed linearly to 0)")
    p.add_argument("--no-anneal-lr", action="store_true", help="keep the learning rate constant")
    p.add_argument("--max-grad-norm", type=float, default=d.max_grad_norm, help="global gradient-norm clip")
    p.add_argument("--gamma", type=float, default=d.gamma, help="discount")
    p.add_argument("--gae-lambda", type=float, default=d.gae_lambda, help="GAE lambda")
    p.add_argument("--clip-eps", type=float, default=d.clip_eps, help="PPO ratio and value clip")
    p.add_argument("--ent-coef", type=float, default=d.ent_coef, help="entropy bonus weight")
    p.add_argument("--vf-coef", type=float, default=d.vf_coef, help="value loss weight")
    p.add_argument("--hidden-size", type=int, default=d.hidden_size, help="MLP width (two tanh layers)")
    p.add_argument("--log-every", type=int, default=d.log_every, help="updates per jitted chunk / progress line")
    p.add_argument("--final-window", type=float, default=d.final_window, help="fraction of final updates averaged")
    p.add_argument("--out", type=Path, default=Path("."), help="directory for the plot")
    p.add_argument("--plot", type=Path, default=None, help="learning-curve PNG; None means OUT/ppo_curve.png")
    p.add_argument("--no-plot", action="store_true", help="save no learning curve")
    a = p.parse_args(argv)
    config = PPOConfig(
        env_name=a.env,
        num_envs=a.num_envs,
        num_steps=a.num_steps,
        total_timesteps=a.total_timesteps,
        update_epochs=a.update_epochs,
        num_minibatches=a.num_minibatches,
        learning_rate=a.lr,
        anneal_lr=not a.no_anneal_lr,
        max_grad_norm=a.max_grad_norm,
        gamma=a.gamma,
        gae_lambda=a.gae_lambda,
        clip_eps=a.clip_eps,
        ent_coef=a.ent_coef,
        vf_coef=a.vf_coef,
        hidden_size=a.hidden_size,
        seed=a.seed,
        implementation=None if a.implementation == "none" else a.implementation,
        log_every=a.log_every,
        final_window=a.final_window,
    )
    try:
        config.validate()
        check_implementation(config.implementation)
        make_env(config)
    except ValueError as e:
        p.error(str(e))
    plot = None if a.no_plot else (a.plot if a.plot is not None else a.out / "ppo_curve.png")
    return config, plot


def main(argv: list[str] | None = None) -> float:
    """Command-line entry point; returns the final mean episodic return."""
    config, plot = _parse_args(argv)
    result = train(config)
    window = max(1, math.ceil(config.final_window * config.num_updates))
    print(
        f"trained {config.num_updates * config.batch_size} steps in {result.train_seconds:.1f} s "
        f"(+{result.compile_seconds:.1f} s compile); final: {result.final_episode_count} episodes "
        f"ended in the last {window} updates"
    )
    if plot is not None:
        plot.parent.mkdir(parents=True, exist_ok=True)
        plot_learning_curve(result, config, plot)
        print(f"learning curve saved to {plot}")
    print(f"final mean episodic return: {result.final_mean_return:.1f}")
    return result.final_mean_return


if __name__ == "__main__":
    main()
