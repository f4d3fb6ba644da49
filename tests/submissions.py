"""Submissions the autograder must judge right, per exercise (the grade_id of the solution cell).

``SHORTCUTS``: answers that hand the exercise to the library (the ways a student would try, including those that
bind the function to another name before the check), each of which must score 0. ``ALSO_CORRECT``: right answers
written differently from the book's, each of which must score full marks.
"""

SHORTCUTS = {
    "ex1-stable-softmax": [
        "_softmax = torch.softmax\ndef stable_softmax(x, temperature=1.0):\n"
        "    return _softmax(x / temperature, dim=-1)",
        "from attn import softmax as sm\ndef stable_softmax(x, temperature=1.0):\n"
        "    return sm(x, temperature=temperature)",
        "def stable_softmax(x, temperature=1.0):\n    return (x / temperature).log_softmax(-1).exp()",
    ],
    "ex2-soft-lookup": [
        "from attn import scaled_dot_product_attention as sdpa\n"
        "def soft_lookup(query, keys, values, temperature=1.0):\n"
        "    out, w = sdpa(query[None], keys, values, scale=1 / temperature)\n    return out[0], w[0]",
    ],
    "ex3-entropy": ["def attention_entropy(weights):\n    return attn.analysis.attention_entropy(weights)"],
    "ex1-bahdanau-scores": [
        "from attn import additive_scores as scores\ndef bahdanau_scores(s, H, W_a, U_a, v_a):\n"
        "    return scores(s[None, None], H[None], W_a, U_a, v_a)[0, 0]",
    ],
    "ex2-context-vector": [
        "def context_vector(e, H, mask):\n    c, alpha = attn.attend(e[None], H, mask[None])\n"
        "    return c[0], alpha[0]",
    ],
    "ex1-sentence-vectors": ["def sentence_vectors(model, words):\n    return model.encode(0, words)"],
    "ex2-one-hop": [
        "def one_hop(u, m, c):\n"
        "    o, p = attn.memn2n.memory_read(u[None], m[None], c[None], torch.ones(1, len(m), dtype=torch.bool))\n"
        "    return o[0], p[0]",
    ],
    "ex1-sharpen": ["from attn.memory import sharpen as s_\ndef my_sharpen(w, gamma):\n    return s_(w, gamma)"],
    "ex2-allocation": ["from attn.memory import allocation as a\ndef my_allocation(u, f=a):\n    return f(u)"],
    "ex1-self-attention": [
        "def self_attention(X):\n    return attn.scaled_dot_product_attention(X, X, X, scale=1.0)",
        "from attn import softmax as s\ndef self_attention(X):\n    A = s(X @ X.T)\n    return A @ X, A",
    ],
    "ex2-qkv-attention": [
        "def qkv_attention(X, W_q, W_k, W_v):\n    return attn.scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v)",
        "def qkv_attention(X, W_q, W_k, W_v):\n    Q, K, V = X @ W_q, X @ W_k, X @ W_v\n"
        "    A = torch.softmax(Q @ K.T / K.shape[-1] ** 0.5, dim=-1)\n"
        "    return getattr(attn, 'scaled_dot_product_attention')(Q, K, V)[0], A",
    ],
    "ex3-causal-attention": [
        "def causal_self_attention(X, W_q, W_k, W_v):\n"
        "    mask = attn.causal_mask(len(X))\n"
        "    return attn.scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v, mask=mask)",
    ],
    "ex1-positional-table": ["def positional_table(T, d_model):\n    return sinusoidal_positions(T, d_model)"],
    "ex1-layer-norm": [
        "def my_layer_norm(x, gamma, beta, eps=1e-5):\n"
        "    return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, eps)",
    ],
    "ex2-decoder-mask": [
        "def decoder_mask(target, pad):\n"
        "    return attn.causal_mask(target.shape[1]) & (target != pad)[:, None, None, :]",
    ],
    "ex3-count-parameters": [
        "def count_parameters(d_model, d_ff, num_layers, source_vocab, target_vocab):\n"
        "    c = TransformerConfig(source_vocab, target_vocab, d_model=d_model, num_layers=num_layers, d_ff=d_ff)\n"
        "    return sum(p.numel() for p in Transformer(c).parameters())",
    ],
    "ex1-patchify": ["from attn.vision import patchify as pf\ndef my_patchify(images, P):\n    return pf(images, P)"],
    "ex2-rollout": [
        "from attn.vision import attention_rollout as r\ndef my_rollout(A1, A2):\n    return r([A1[0], A2[0]])",
    ],
    "ex3-glimpse": [
        "def my_glimpse(image, row, col, size):\n    padded = torch.nn.functional.pad(image, (size,) * 4)\n"
        "    top, left = row + size - size // 2, col + size - size // 2\n"
        "    return padded[:, top : top + size, left : left + size]",
    ],
}

ALSO_CORRECT = {
    # Divide first, then subtract the maximum: as stable, and rounded a little differently.
    "ex1-stable-softmax": [
        "def stable_softmax(x, temperature=1.0):\n    z = x / temperature\n"
        "    z -= z.max(dim=-1, keepdim=True).values\n"
        "    e = z.exp()\n    return e / e.sum(dim=-1, keepdim=True)",
    ],
    "ex2-soft-lookup": [
        "def soft_lookup(query, keys, values, temperature=1.0):\n"
        "    weights = torch.softmax((keys @ query) / temperature, dim=0)\n    return values.T @ weights, weights",
    ],
    "ex1-layer-norm": [
        "def my_layer_norm(x, gamma, beta, eps=1e-5):\n"
        "    var, mean = torch.var_mean(x, -1, unbiased=False, keepdim=True)\n"
        "    return (x - mean) * torch.rsqrt(var + eps) * gamma + beta",
    ],
}

SHORTCUTS["ex2-merge-heads"] = [
    "def merge_heads(heads):\n    B, h, T, d_k = heads.shape\n    return heads.transpose(1, 2).reshape(B, T, h * d_k)\n"
    "def multi_head_self_attention(x, mha):\n    return mha(x, x, x)[0]",
    "def merge_heads(heads):\n    B, h, T, d_k = heads.shape\n    return heads.transpose(1, 2).reshape(B, T, h * d_k)\n"
    "def multi_head_self_attention(x, mha):\n    return mha.forward(x, x, x)[0]",
]

SHORTCUTS["ex2-mask-tokens"] = [
    "from attn.data.language import mask_tokens as corrupt\n"
    "def my_mask_tokens(tokens, mask, vocab_size, rate=0.15, generator=None):\n"
    "    return corrupt(tokens, mask, vocab_size, rate, generator)",
    "import attn.train\ndef my_mask_tokens(tokens, mask, vocab_size, rate=0.15, generator=None):\n"
    "    return attn.train.language_model_batch(tokens, 'masked', mask, vocab_size, generator)",
]
SHORTCUTS["ex1-sentence-embedding"] = [
    "from attn.pretrained import mean_pool\ndef sentence_embedding(hidden, ids, pad=0):\n"
    "    return mean_pool(hidden, ids, pad)",
]
SHORTCUTS["ex2-previous-token-score"] = [
    "import attn.analysis\ndef previous_token_score(weights):\n    T = weights.shape[-1]\n"
    "    rows = (torch.arange(T) >= 1)[None, :].expand(weights.shape[0], T)\n"
    "    return attn.analysis.mass_on(weights, attn.analysis.previous_token_targets(T), rows)",
]
ALSO_CORRECT["ex2-mask-tokens"] = [
    "def my_mask_tokens(tokens, mask, vocab_size, rate=0.15, generator=None):\n"
    "    chosen = torch.bernoulli(torch.full(tokens.shape, rate), generator=generator).bool() & (tokens >= 4)\n"
    "    kind = torch.randint(0, 10, tokens.shape, generator=generator)  # 0-7 mask, 8 random, 9 kept\n"
    "    allowed = torch.tensor([w for w in range(4, vocab_size) if w != mask])\n"
    "    pick = allowed[torch.randint(0, len(allowed), tokens.shape, generator=generator)]\n"
    "    inputs = tokens.clone()\n    inputs[chosen & (kind < 8)] = mask\n"
    "    inputs[chosen & (kind == 8)] = pick[chosen & (kind == 8)]\n"
    "    return inputs, tokens.masked_fill(~chosen, -100)",
]
ALSO_CORRECT["ex1-sentence-embedding"] = [
    "def sentence_embedding(hidden, ids, pad=0):\n    keep = ids != pad\n"
    "    mean = torch.stack([h[k].mean(0) for h, k in zip(hidden, keep)])\n"
    "    return torch.nn.functional.normalize(mean, dim=-1)",
]
ALSO_CORRECT["ex2-previous-token-score"] = [
    "def previous_token_score(weights):\n    T = weights.shape[-1]\n"
    "    return weights[:, :, torch.arange(1, T), torch.arange(T - 1)].mean(dim=(0, 2))",
]
