"""Exports a GPT-2-small-shaped decoder: export_gpt2.py {gpt2|gpt2_decode} OUT_DIR

12 pre-norm layers, hidden 768, 12 heads, ffn 3072, tanh-GELU, vocab 50257, causal attention,
LM head tied to the token embedding (the GPT-2 layout, written in plain torch). Random weights
under a fixed seed (GPT-2's initialiser: N(0, 0.02), residual projections scaled down).

gpt2:        'input_ids' i64 [1,128] -> 'logits' f32 [1,128,50257]
gpt2_decode: one generation step with a key/value cache:
             'input_ids' i64 [1,seq] + 'past_key_i'/'past_value_i' f32 [1,12,past,64] (i = 0..11)
             -> 'logits' [1,seq,50257] + 'present_key_i'/'present_value_i' [1,12,past+seq,64].
             Its inputs are the real cache of the first 127 tokens of gpt2's sequence plus the
             128th token, so its logits equal gpt2's last-position logits (checked here).
"""
import math

import numpy as np
import torch
from torch import nn

import zoo_common as zc

VOCAB, HIDDEN, LAYERS, HEADS, FFN, SEQ, MAX_POS = 50257, 768, 12, 12, 3072, 128, 1024
HEAD_DIM = HIDDEN // HEADS


def gelu_tanh(x):
    # GPT-2's GELU approximation, written out the way GPT-2 exports ship it (Pow, Tanh, Mul).
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(HIDDEN, eps=1e-5)
        self.c_attn = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.attn_proj = nn.Linear(HIDDEN, HIDDEN)
        self.ln_2 = nn.LayerNorm(HIDDEN, eps=1e-5)
        self.c_fc = nn.Linear(HIDDEN, FFN)
        self.mlp_proj = nn.Linear(FFN, HIDDEN)

    def heads(self, t):  # [B,S,HIDDEN] -> [B,HEADS,S,HEAD_DIM]
        return t.reshape(t.shape[0], t.shape[1], HEADS, HEAD_DIM).transpose(1, 2)

    def forward(self, x, causal, past_k=None, past_v=None):
        q, k, v = self.c_attn(self.ln_1(x)).split(HIDDEN, dim=2)
        q, k, v = self.heads(q), self.heads(k), self.heads(v)
        if past_k is not None:
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        s, t = q.shape[2], k.shape[2]
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(HEAD_DIM)
        # Query i (absolute position t-s+i) sees keys 0..t-s+i; masked scores get the most
        # negative float (not -inf), as GPT-2 implementations do.
        mask = causal[:, :, t - s:t, :t]
        w = w.masked_fill(~mask, torch.finfo(w.dtype).min)
        a = torch.matmul(torch.softmax(w, dim=-1), v)
        a = a.transpose(1, 2).reshape(x.shape[0], x.shape[1], HIDDEN)
        x = x + self.attn_proj(a)
        x = x + self.mlp_proj(gelu_tanh(self.c_fc(self.ln_2(x))))
        return x, k, v


class GPT2(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN)
        self.wpe = nn.Embedding(MAX_POS, HIDDEN)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(HIDDEN, eps=1e-5)
        self.register_buffer("causal", torch.tril(torch.ones(MAX_POS, MAX_POS, dtype=torch.bool)).view(
            1, 1, MAX_POS, MAX_POS), persistent=False)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("bias"):
                    p.copy_(0.02 * torch.randn_like(p))  # not zero: zeros would hide a dropped bias
                elif "ln_" in name:
                    p.copy_(1 + 0.1 * torch.randn_like(p))
                else:
                    std = 0.02 / math.sqrt(2 * LAYERS) if name.endswith("proj.weight") else 0.02
                    p.normal_(0.0, std)

    def forward(self, input_ids, pasts=None):
        past_len = 0 if pasts is None else pasts[0][0].shape[2]
        positions = torch.arange(past_len, past_len + input_ids.shape[1]).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        presents = []
        for i, block in enumerate(self.blocks):
            pk, pv = (None, None) if pasts is None else pasts[i]
            x, k, v = block(x, self.causal, pk, pv)
            presents.append((k, v))
        logits = torch.matmul(self.ln_f(x), self.wte.weight.t())  # tied LM head
        return logits, presents


class Full(nn.Module):
    def __init__(self, core):
        super().__init__()
        self.core = core

    def forward(self, input_ids):
        return self.core(input_ids)[0]


class DecodeStep(nn.Module):
    def __init__(self, core):
        super().__init__()
        self.core = core

    def forward(self, input_ids, *flat_past):
        pasts = [(flat_past[2 * i], flat_past[2 * i + 1]) for i in range(LAYERS)]
        logits, presents = self.core(input_ids, pasts)
        return (logits, *[t for kv in presents for t in kv])


def main():
    name, out_dir = zc.main_args()
    zc.seed_everything()
    with zc.Timer("build"):
        core = GPT2().eval()
    ids = zc.rng().randint(0, VOCAB, size=(1, SEQ)).astype("int64")
    if name == "gpt2":
        zc.export(Full(core), out_dir, {"input_ids": ids}, ["input_ids"], ["logits"])
        return

    kv_names = [f"{kind}_{i}" for i in range(LAYERS) for kind in ("key", "value")]
    past_names = ["past_" + n for n in kv_names]
    present_names = ["present_" + n for n in kv_names]
    with zc.Timer("cache of the first 127 tokens"), torch.no_grad():
        full_logits, _ = core(torch.from_numpy(ids))
        _, presents = core(torch.from_numpy(ids[:, :-1]))
    inputs = {"input_ids": ids[:, -1:].copy()}
    for n, t in zip(past_names, [t for kv in presents for t in kv]):
        inputs[n] = t.numpy().copy()
    with torch.no_grad():
        step_logits = DecodeStep(core)(torch.from_numpy(inputs["input_ids"]),
                                       *[torch.from_numpy(inputs[n]) for n in past_names])[0]
    err = (step_logits[0, -1] - full_logits[0, -1]).abs().max().item()
    assert err < 1e-3, f"decode step disagrees with the full sequence: max |diff| {err}"
    print(f"  decode step vs full sequence: max |diff| {err:.2e}")

    dynamic = {"input_ids": {1: "seq"}, "logits": {1: "seq"}}
    dynamic.update({n: {2: "past"} for n in past_names})
    dynamic.update({n: {2: "total"} for n in present_names})
    zc.export(DecodeStep(core), out_dir, inputs, ["input_ids"] + past_names, ["logits"] + present_names,
              dynamic_axes=dynamic)


if __name__ == "__main__":
    main()
