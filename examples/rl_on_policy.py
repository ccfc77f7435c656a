#!/usr/bin/env python3
"""On-policy RL where the trainer's forward is the sampler's, bit for bit
(issue 29, docs/rl.md): a small GRPO loop on a float GGUF (stories260K).

Each step: rollouts from stet.LLM (several seeded samples per prompt), a
reward (how often a target word appears), group-normalized advantages, the
trainer's log-probabilities of the sampled tokens from stet.torch (the
engine's own forward over the torch parameters), one Adam step, and
LLM.load_weights to hand the new weights to the sampler. Per step it reports
how far the trainer's log-probabilities are from the sampler's: through
stet.torch (exactly 0.0: the importance ratio is exactly 1) and through a
plain PyTorch forward of the same weights (what every other stack has).

  python examples/rl_on_policy.py --model stories260K.gguf --steps 8 --seed 1 \
      --json rl.json --plot rl.svg

Exit codes: 0 ok, 1 failed (a stet mismatch, a bad model), 2 bad command line.
"""
import argparse
import json
import math
import sys
import time

PROMPTS = ["Once upon a time", "One day, a little girl", "The dog", "Tom and his mom",
           "There was a big tree", "Lily liked to"]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", "--model", required=True, help="a float GGUF (f32): stories260K.gguf")
    p.add_argument("--steps", type=int, default=8, help="optimizer steps (default 8)")
    p.add_argument("--seed", type=int, default=1, help="seed of the rollouts and of torch")
    p.add_argument("--json", metavar="OUT", help="write the per-step record here")
    p.add_argument("--plot", metavar="OUT.svg", help="an SVG of reward and both mismatches")
    p.add_argument("--word", default="happy", help="the target word rewarded (default happy)")
    p.add_argument("--samples", type=int, default=8, help="samples per prompt (default 8)")
    p.add_argument("--max-tokens", type=int, default=32, help="tokens per sample (default 32)")
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    p.add_argument("-t", "--threads", type=int, default=0, help="threads (0: every core)")
    a = p.parse_args(argv)
    if a.steps < 1 or a.samples < 2 or a.max_tokens < 1 or a.lr <= 0:
        p.error("--steps >= 1, --samples >= 2, --max-tokens >= 1 and --lr > 0 are required")
    return a


def reward(text, word):
    """How often the word appears (capped at 3): a signal the model can learn fast."""
    return float(min(3, sum(1 for w in text.lower().replace(".", " ").replace(",", " ").split()
                            if w.strip("!?\"'") == word)))


def rollouts(llm, prompts, step, a):
    """(prompt ids, completion ids, sampler logprobs, text) per sample."""
    from stet import SamplingParams
    sps = [SamplingParams(n=a.samples, temperature=1.0, seed=a.seed * 100003 + step * 101 + i,
                          max_tokens=a.max_tokens, logprobs=0) for i in range(len(prompts))]
    outs = llm.generate(prompts, sps, use_tqdm=False)
    samples = []
    for o in outs:
        group = []
        for c in o.outputs:
            lps = [d[t].logprob for d, t in zip(c.logprobs, c.token_ids)]
            group.append((list(o.prompt_token_ids), list(c.token_ids), lps, c.text))
        samples.append(group)
    return samples


def batch(samples, torch):
    """Right-padded ids, mask, the completion positions and the sampler's logprobs there."""
    flat = [s for g in samples for s in g]
    T = max(len(p) + len(c) for p, c, _, _ in flat)
    ids = torch.zeros((len(flat), T), dtype=torch.int64)
    mask = torch.zeros_like(ids)
    comp = torch.zeros((len(flat), T), dtype=torch.bool)
    old = torch.zeros((len(flat), T), dtype=torch.float32)
    for b, (p, c, lps, _) in enumerate(flat):
        ids[b, :len(p) + len(c)] = torch.tensor(p + c)
        mask[b, :len(p) + len(c)] = 1
        comp[b, len(p):len(p) + len(c)] = True
        old[b, len(p):len(p) + len(c)] = torch.tensor(lps, dtype=torch.float32)
    return ids, mask, comp, old


def mismatch(lp, old, comp):
    """(max |trainer - sampler|, KL estimate k3 = E[exp(d) - 1 - d], d = trainer - sampler)
    over the sampled tokens; both exactly 0.0 when the logprobs are equal."""
    d = (lp.detach() - old)[comp].double()
    return float(d.abs().max()), float((d.exp() - 1 - d).mean())


def grpo_loss(lp, old, comp, adv, clip=0.2):
    """GRPO's clipped surrogate, token-mean per sequence, then mean."""
    ratio = (lp - old).exp()  # exactly 1 where the trainer's logprobs are the sampler's
    surr = (ratio * adv[:, None]).minimum(ratio.clamp(1 - clip, 1 + clip) * adv[:, None])
    per_seq = (surr * comp).sum(1) / comp.sum(1).clamp(min=1)
    return -per_seq.mean()


def advantages(samples, word, torch):
    rewards = [[reward(s[3], word) for s in g] for g in samples]
    adv = []
    for r in rewards:
        m = sum(r) / len(r)
        sd = math.sqrt(sum((x - m) ** 2 for x in r) / len(r))
        adv += [(x - m) / (sd + 1e-4) for x in r]
    flat = [x for r in rewards for x in r]
    return torch.tensor(adv, dtype=torch.float32), sum(flat) / len(flat)


def step_once(step, llm, policy, opt, a, torch):
    t0 = time.time()
    samples = rollouts(llm, PROMPTS, step, a)
    t1 = time.time()
    ids, mask, comp, old = batch(samples, torch)
    adv, mean_reward = advantages(samples, a.word, torch)
    lp = policy.logprobs(ids, mask)  # stet's forward: the sampler's numbers
    t_fwd = time.time()
    with torch.no_grad():
        lp_torch = policy.torch_logprobs(ids, mask)  # a plain PyTorch forward, same weights
    t_cmp = time.time()
    d_stet, kl_stet = mismatch(lp, old, comp)
    d_torch, kl_torch = mismatch(lp_torch, old, comp)
    loss = grpo_loss(lp, old, comp, adv)
    opt.zero_grad()
    loss.backward()
    opt.step()
    t2 = time.time()
    llm.load_weights(policy.gguf_state())  # the sampler follows the optimizer step
    t3 = time.time()
    rec = {"step": step, "reward": mean_reward, "loss": loss.item(),
           "max_abs_diff_stet": d_stet, "max_abs_diff_torch": d_torch,
           "kl_stet": kl_stet, "kl_torch": kl_torch,
           "tokens": int(mask.sum()),
           "seconds": {"rollout": t1 - t0, "stet_forward": t_fwd - t1,
                       "torch_forward_for_comparison": t_cmp - t_fwd,
                       "backward_and_step": t2 - t_cmp, "sync": t3 - t2}}
    print(f"step {step}: reward {mean_reward:.3f}  loss {loss.item():+.2e}  "
          f"|stet-sampler| {d_stet:.1e}  |torch-sampler| {d_torch:.1e}  "
          f"KL stet {kl_stet:.1e} torch {kl_torch:.1e}  "
          f"({t1 - t0:.2f}s rollout, {t_fwd - t1:.2f}s stet forward, {t2 - t_cmp:.2f}s "
          f"backward+step, {t3 - t2:.2f}s sync; {t_cmp - t_fwd:.2f}s torch forward to compare)",
          flush=True)
    return rec


def svg_plot(steps, path):
    """Reward (left) and the two mismatches (right, log scale; stet's 0.0 drawn
    on the floor), by hand: no plotting library needed."""
    W, H, pad = 360, 240, 40
    xs = [s["step"] for s in steps]

    def panel(x0, title, series, log):
        vals = [v for _, _, vs in series for v in vs if not log or v > 0]
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
        if log:
            lo, hi = math.log10(lo) - 0.5, math.log10(hi) + 0.5
        if hi - lo < 1e-12:
            hi = lo + 1
        fx = lambda i: x0 + pad + (i - xs[0]) / max(1, xs[-1] - xs[0]) * (W - 2 * pad)  # noqa
        fy = lambda v: H - pad - ((math.log10(v) if log else v) - lo) / (hi - lo) * (H - 2 * pad)  # noqa
        out = [f'<text x="{x0 + W / 2}" y="20" text-anchor="middle">{title}</text>',
               f'<rect x="{x0 + pad}" y="{pad}" width="{W - 2 * pad}" height="{H - 2 * pad}" '
               'fill="none" stroke="#888"/>',
               f'<text x="{x0 + pad}" y="{H - 10}">step {xs[0]}</text>',
               f'<text x="{x0 + W - pad}" y="{H - 10}" text-anchor="end">step {xs[-1]}</text>',
               f'<text x="{x0 + 2}" y="{pad + 4}" font-size="10">'
               f'{(10 ** hi if log else hi):.2g}</text>',
               f'<text x="{x0 + 2}" y="{H - pad}" font-size="10">'
               f'{(10 ** lo if log else lo):.2g}</text>']
        for k, (name, color, vs) in enumerate(series):
            pts = " ".join(f"{fx(i):.1f},{(fy(v) if (v > 0 or not log) else H - pad):.1f}"
                           for i, v in zip(xs, vs))
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
            out.append(f'<text x="{x0 + pad + 4}" y="{pad + 14 + 14 * k}" fill="{color}" '
                       f'font-size="11">{name}</text>')
        return out

    body = panel(0, "reward (mean per sample)", [("reward", "#1b7", [s["reward"] for s in steps])],
                 False)
    body += panel(W, "max |trainer - sampler| logprob (log scale)",
                  [("plain PyTorch forward", "#d33", [s["max_abs_diff_torch"] for s in steps]),
                   ("stet.torch (0.0, on the floor)", "#36c",
                    [s["max_abs_diff_stet"] for s in steps])], True)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">\n' + "\n".join(body) + "\n</svg>\n")
    with open(path, "w") as f:
        f.write(svg)


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import torch
    except ImportError:
        print("rl_on_policy: needs torch (pip install <checkout>[torch])", file=sys.stderr)
        return 1
    import stet
    from stet.torch import Policy
    torch.manual_seed(a.seed)
    # torch's own kernels (the backward) may otherwise sum in a varying order:
    # then two runs of one seed drift apart after the first optimizer step.
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        llm = stet.LLM(a.model, threads=a.threads)
        policy = Policy.from_gguf(a.model, threads=a.threads)
    except (OSError, ValueError) as e:
        print(f"rl_on_policy: {e}", file=sys.stderr)
        return 1
    start = {n: p.detach().clone() for n, p in policy.gguf_state().items()}
    fp0 = llm.fingerprint
    opt = torch.optim.Adam(policy.parameters(), lr=a.lr)
    steps = [step_once(i, llm, policy, opt, a, torch) for i in range(a.steps)]
    changed = any(not torch.equal(start[n], p) for n, p in policy.gguf_state().items())
    result = {"model": a.model, "word": a.word, "seed": a.seed, "steps": steps,
              "weights_changed": bool(changed and llm.fingerprint != fp0),
              "fingerprint_before": fp0, "fingerprint_after": llm.fingerprint}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    if a.plot:
        svg_plot(steps, a.plot)
    bad = [s["step"] for s in steps if s["max_abs_diff_stet"] != 0.0]
    if bad:
        print(f"rl_on_policy: stet.torch differs from the sampler at steps {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
