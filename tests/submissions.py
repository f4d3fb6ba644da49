"""Submissions the autograder must judge right, per exercise (the grade_id of the solution cell).

``SHORTCUTS``: answers that hand the exercise to the library (the ways a student would try, including those that
bind the function to another name before the check), and near misses (an answer right on the easy inputs only),
each of which must score 0. ``ALSO_CORRECT``: right answers
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
    "ex2-cosine-lookup": [
        "from attn import scaled_dot_product_attention as sdpa\n"
        "def cosine_lookup(queries, keys, values, strength, key_mask):\n"
        "    q, k = (torch.nn.functional.normalize(t, dim=-1) for t in (queries, keys))\n"
        "    return sdpa(q, k, values, mask=key_mask[None, :], scale=strength)",
        # near misses: dot-product scores (right for unit keys only); a large negative number for the masked keys
        # (a query with no key to read gets uniform weights, not zeros)
        "def cosine_lookup(queries, keys, values, strength, key_mask):\n"
        "    s = (strength * queries @ keys.T).masked_fill(~key_mask, float('-inf'))\n"
        "    w = attn.softmax(s)\n    return w @ values, w",
        "def cosine_lookup(queries, keys, values, strength, key_mask):\n"
        "    q, k = (torch.nn.functional.normalize(t, dim=-1) for t in (queries, keys))\n"
        "    w = torch.softmax((strength * q @ k.T).masked_fill(~key_mask, -1e9), dim=-1)\n    return w @ values, w",
    ],
    "ex3-entropy": [
        "def attention_entropy(weights):\n    return attn.analysis.attention_entropy(weights)",
        # a near miss, not the library: the log of the number of nonzero weights, right on uniform rows only
        "def attention_entropy(weights):\n    return (weights > 0).sum(-1).float().log()",
    ],
    "ex1-bahdanau-scores": [
        "from attn import additive_scores as scores\ndef bahdanau_scores(s, H, W_a, U_a, v_a):\n"
        "    return scores(s[None, None], H[None], W_a, U_a, v_a)[0, 0]",
    ],
    # chapter 2, Exercise 2 (2 points): Luong's local attention. Near misses: the softmax over the whole sentence
    # (no window), and the Gaussian's weights renormalised (the paper does not)
    "ex2-local-attention": [
        "def local_context(e, H, p, D):\n    s = torch.arange(len(e), dtype=e.dtype)\n"
        "    alpha = torch.softmax(e, 0) * torch.exp(-((s - p) ** 2) / (2 * (D / 2) ** 2))\n"
        "    return alpha @ H, alpha",
        "def local_context(e, H, p, D):\n    s = torch.arange(len(e), dtype=e.dtype)\n"
        "    alpha = torch.softmax(e.masked_fill((s - p).abs() > D, float('-inf')), 0)\n"
        "    alpha = alpha * torch.exp(-((s - p) ** 2) / (2 * (D / 2) ** 2))\n"
        "    alpha = alpha / alpha.sum()\n    return alpha @ H, alpha",
    ],
    "ex1-sentence-vectors": [
        "def sentence_vectors(model, words):\n    return model.encode(0, words)",
        # encode's body; sorted words make the bag of words' sums bit-equal, as the check asks
        "def sentence_vectors(model, words):\n    if model.config.encoding == 'bow':\n"
        "        words = words.sort(-1).values\n    return model.encode_tables(range(1), words)[..., 0, :]",
    ],
    # chapter 3, Exercise 3 (1 point): a hop hits when its largest weight is on any supporting slot (N, S), -1 =
    # padding. Near misses: the first supporting slot only (the chapter's chain, supporting[:, 0]); the padding
    # clamped to slot 0 (as a gather needs it); the padding used as an index (-1 marks the last slot); the fraction
    # taken over the questions with a supporting slot only (a row of padding is a miss, and still counts)
    "ex3-support-hits": [
        "def support_hits(hop_attention, supporting):\n"
        "    return (hop_attention.argmax(-1) == supporting[:, 0][:, None]).float().mean(0)",
        "def support_hits(hop_attention, supporting):\n    slots = supporting.clamp_min(0)\n"
        "    return (hop_attention.argmax(-1)[:, :, None] == slots[:, None, :]).any(-1).float().mean(0)",
        "def support_hits(hop_attention, supporting):\n    N, K, M = hop_attention.shape\n"
        "    mask = torch.zeros(N, M, dtype=torch.bool)\n"
        "    mask[torch.arange(N)[:, None], supporting] = True\n"
        "    return mask.gather(1, hop_attention.argmax(-1)).float().mean(0)",
        "def support_hits(hop_attention, supporting):\n"
        "    hit = (hop_attention.argmax(-1)[:, :, None] == supporting[:, None, :]).any(-1)\n"
        "    return hit.float().sum(0) / (supporting >= 0).any(-1).sum()",
    ],
    "ex2-key-value-hops": [
        # near misses: MemN2N's layer-wise update R q + o (no map on what was read), and R on the read only
        "def key_value_hops(q, keys, values, R):\n    ps = []\n    for R_k in R:\n"
        "        p = torch.softmax(keys @ q, 0)\n        q = R_k @ q + p @ values\n        ps.append(p)\n"
        "    return q, torch.stack(ps)",
        "def key_value_hops(q, keys, values, R):\n    ps = []\n    for R_k in R:\n"
        "        p = torch.softmax(keys @ q, 0)\n        q = q + R_k @ (p @ values)\n        ps.append(p)\n"
        "    return q, torch.stack(ps)",
    ],
    "ex1-sharpen": [
        "from attn.memory import sharpen as s_\ndef my_sharpen(w, gamma):\n    return s_(w, gamma)",
        # a near miss: the plain powers, NaN once w**gamma underflows (the exercise asks for a large gamma)
        "def my_sharpen(w, gamma):\n    p = w**gamma\n    return p / p.sum(-1, keepdim=True)",
    ],
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
    "ex1-rope": [
        "def rope(x, start=0):\n    return rotary_positions(x, start)",
        # a near miss: GPT-NeoX's pairing (feature i with feature i + d/2), not the paper's adjacent pairs
        "def rope(x, start=0):\n    T, d = x.shape[-2:]\n"
        "    m = torch.arange(start, start + T, dtype=x.dtype)[:, None]\n"
        "    a = m * 10000.0 ** (-torch.arange(0, d, 2, dtype=x.dtype) / d)\n"
        "    x1, x2 = x[..., : d // 2], x[..., d // 2 :]\n"
        "    return torch.cat([x1 * a.cos() - x2 * a.sin(), x1 * a.sin() + x2 * a.cos()], -1)",
    ],
    "ex1-layer-norm": [
        "def my_layer_norm(x, gamma, beta, eps=1e-5):\n"
        "    return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, eps)",
        # the library's own two lines (printed after the exercise): torch's variance and inverse square root
        "def my_layer_norm(x, gamma, beta, eps=1e-5):\n"
        "    var, mean = torch.var_mean(x, -1, unbiased=False, keepdim=True)\n"
        "    return (x - mean) * torch.rsqrt(var + eps) * gamma + beta",
        "def my_layer_norm(x, gamma, beta, eps=1e-5):\n"
        "    mean = x.mean(-1, keepdim=True)\n"
        "    return (x - mean) / (x.var(-1, unbiased=False, keepdim=True) + eps).sqrt() * gamma + beta",
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
    "ex4-occlusion": [
        # constants: chance with the asked object gone, everything right without another one
        "def occluded_accuracy(model, scenes, which):\n    return 0.25 if which == 'asked' else 1.0",
        # nothing erased for "other": the library's accuracy on the intact scenes
        "def occluded_accuracy(model, scenes, which):\n"
        "    return 0.25 if which == 'asked' else accuracy(model, scenes)",
    ],
    "ex3-hide-the-verb": [
        # constants
        "def subject_number(model, tokens, mask, hide_verb=False):\n    return 0.7 if hide_verb else 0.99",
        # the library's fill-in for the single blank, the two blanks by hand
        "def subject_number(model, tokens, mask, hide_verb=False):\n"
        "    rows = torch.arange(len(tokens))\n"
        "    at = (kind[tokens] == 1).int().argmax(1)\n"
        "    if not hide_verb:\n"
        "        guess = fill_in(model, tokens, mask)[rows, at]\n"
        "    else:\n"
        "        blanked = tokens.clone()\n"
        "        blanked[rows, at] = mask\n"
        "        blanked[rows, at + 1] = mask\n"
        "        with torch.no_grad():\n"
        "            guess = model(blanked).logits[rows, at].argmax(-1)\n"
        "    return (number[guess] == number[tokens[rows, at]]).float().mean().item()",
    ],
    "ex3-cls-parking": [
        # constants
        "def cls_parking_test(bert, tokenizer, texts, k):\n    return 0.01, 0.09",
    ],
    "ex4-right-key-weight": [
        # a constant
        "def right_key_weight(M, temperature=1.0, n=2000, d=16, noise=0.5, seed=0):\n    return 0.5",
        # the book's numbers, looked up instead of measured: right where the chapter asks, wrong everywhere else
        "def right_key_weight(M, temperature=1.0, n=2000, d=16, noise=0.5, seed=0):\n"
        "    table = {4: 0.87, 16: 0.63, 64: 0.35, 256: 0.16}\n"
        "    if temperature != 1.0:\n"
        "        table = {4: 0.96, 16: 0.86, 64: 0.69, 256: 0.48}\n"
        "    return table.get(M, 0.5)",
    ],
    "ex3-walk-focus": [
        # a constant
        "def walk_focus(gamma, steps=10, n=1000, N=32, blur=0.4, seed=0):\n    return 0.5",
        # the formula for γ = 1 and a guess above it: no walk is run
        "def walk_focus(gamma, steps=10, n=1000, N=32, blur=0.4, seed=0):\n"
        "    return (1 - blur / 2) ** steps if gamma == 1 else min(1.0, 0.3 * gamma)",
    ],
    "ex4-cross-ablation": [
        # a constant
        "def exact_match_without_cross(model, pairs, layers=()):\n    return 1.0",
        # the library's evaluation, with nothing switched off
        "def exact_match_without_cross(model, pairs, layers=()):\n"
        "    return evaluate_transformer(model, pairs, corpus).exact_match",
        # the chapter's numbers by heart
        "def exact_match_without_cross(model, pairs, layers=()):\n"
        "    return {(): 0.98, (0,): 0.75, (1,): 0.2}.get(tuple(layers), 0.0)",
    ],
    # chapter 3, Exercise 4
    "ex4-word-order": [
        # a constant
        "def answers_changed(run, exs):\n    return 0.5",
        # the chapter's effect by heart: right on both trained runs' headline numbers, measures nothing
        "def answers_changed(run, exs):\n    return 0.0 if run.model.config.encoding == 'bow' else 0.65",
    ],
    # chapter 5, Exercise 4
    "ex4-score-spread": [
        # constants: chapter 1's rule of thumb with the spread this model has, measures nothing
        "def untrained_score_spread(d_k, scaled, seed=0):\n    return 0.34 if scaled else 0.34 * d_k**0.5",
        # chapter 1's experiment on random unit-variance vectors instead of the model
        "def untrained_score_spread(d_k, scaled, seed=0):\n"
        "    g = torch.Generator().manual_seed(seed)\n"
        "    q, k = torch.randn(500, 10, d_k, generator=g), torch.randn(500, 10, d_k, generator=g)\n"
        "    return (q @ k.transpose(-2, -1) / (d_k**0.5 if scaled else 1.0)).std().item()",
        # the embeddings without the layer normalization the mixer reads them through
        "def untrained_score_spread(d_k, scaled, seed=0):\n"
        "    with seeded(seed):\n"
        "        m = MixerTagger('attention', **tagger_sizes, max_len=T, d_k=d_k, scaled=scaled)\n"
        "    with torch.no_grad():\n"
        "        x = m.embedding(test_x)\n"
        "        s = m.mixer.W_q(x) @ m.mixer.W_k(x).transpose(-2, -1)\n"
        "    return (s / (d_k**0.5 if scaled else 1.0)).std().item()",
    ],
    "ex4-blurred-attention": [
        # a constant: no experiment at all
        "def blurred_exact_match(model, pairs, corpus, mix):\n    return 0.5",
        # the library's blurred attention does the experiment
        "from attn.seq2seq import BlurredAttention as Blur\n"
        "def blurred_exact_match(model, pairs, corpus, mix):\n"
        "    learned = model.attention\n"
        "    model.attention = Blur(learned, mix)\n"
        "    try:\n"
        "        return evaluate_translation(model, pairs, corpus).exact_match\n"
        "    finally:\n"
        "        model.attention = learned",
        # a real measurement of the wrong thing: the model as it is, scaled down by a guess
        "def blurred_exact_match(model, pairs, corpus, mix):\n"
        "    return evaluate_translation(model, pairs, corpus).exact_match * (1 - mix)",
    ],
    # chapter 6, Exercise 4 (2 points): accuracy drop per removed head
    "ex4-head-drops": [
        # constants: a big drop for every head
        "def head_drops(model, inputs, labels):\n    return torch.full((model.config.num_heads,), 0.8)",
        # the library's ablation, under another name
        "from attn.analysis import ablate_heads as off\n"
        "def head_drops(model, inputs, labels):\n"
        "    mha = model.layers.layers[0].self_attention\n    full = tagging_accuracy(model, inputs, labels)\n"
        "    drops = []\n    for k in range(mha.h):\n"
        "        with off([mha], [(0, k)]):\n"
        "            drops.append(full - tagging_accuracy(model, inputs, labels))\n"
        "    return torch.tensor(drops)",
    ],
    # chapter 7, Exercise 4 (2 points): how often shuffling the input changes the output
    "ex4-changed-by-shuffling": [
        # a constant
        "def changed_by_shuffling(model, pairs, corpus, seed=0):\n    return 0.5",
        # the expected answer read off the model's configuration, nothing decoded
        "def changed_by_shuffling(model, pairs, corpus, seed=0):\n"
        "    return 0.0 if model.config.positions == 'none' else 0.9",
    ],
    "ex1-delta-write": [
        "from attn.scale.linear import FastWeights, delta_rule_attention as dra\n"
        "def delta_write(S, k, v, beta):\n"
        "    state = FastWeights(S, S.new_zeros(len(S)))\n"
        "    return dra(k[None], k[None], v[None], beta, state=state, feature_map=None)[1].S",
        # a near miss: the plain sum, which adds the new value to the old one instead of replacing it
        "def delta_write(S, k, v, beta):\n    return S + beta * torch.outer(k, v)",
        # a near miss: β on the new value only, so β < 1 does not move the read a fraction β of the way
        "def delta_write(S, k, v, beta):\n    return S + torch.outer(k, beta * v - S.T @ k)",
    ],
    "ex2-causal-tiles": [
        "import attn\ndef causal_tiled_attention(q, k, v, block):\n"
        "    mask = attn.causal_mask(len(q))\n"
        "    return attn.scale.tiled.tiled_attention(q, k, v, mask, block_q=block, block_k=block)[0]",
        # a near miss: the right numbers from every tile, the ones above the diagonal masked rather than skipped
        "def causal_tiled_attention(q, k, v, block):\n"
        "    T, d = q.shape\n    out = v.new_empty(T, v.shape[-1])\n"
        "    for i0 in range(0, T, block):\n"
        "        i1 = min(i0 + block, T)\n"
        "        m = torch.full((i1 - i0,), -math.inf, dtype=q.dtype)\n"
        "        l = torch.zeros(i1 - i0, dtype=q.dtype)\n"
        "        o = torch.zeros(i1 - i0, v.shape[-1], dtype=v.dtype)\n"
        "        for j0 in range(0, T, block):\n"
        "            j1 = min(j0 + block, T)\n"
        "            s = q[i0:i1] @ k[j0:j1].T / math.sqrt(d)\n"
        "            later = torch.arange(j0, j1)[None, :] > torch.arange(i0, i1)[:, None]\n"
        "            s = s.masked_fill(later, -math.inf)\n"
        "            m_new = torch.maximum(m, s.amax(-1))\n"
        "            c = torch.exp(m - m_new)\n"
        "            p = torch.exp(s - m_new[:, None])\n"
        "            l, o, m = c * l + p.sum(-1), c[:, None] * o + p @ v[j0:j1], m_new\n"
        "        out[i0:i1] = o / l[:, None]\n"
        "    return out",
    ],
    "ex3-decayed-chunks": [
        "from attn.scale.linear import decayed_linear_attention as dla\n"
        "def decayed_chunks(Q, K, V, gamma, chunk):\n    return dla(Q, K, V, gamma, feature_map=None)[0]",
        # a near miss: the whole T x T masked product with the decay, right numbers at O(T² d)
        "def decayed_chunks(Q, K, V, gamma, chunk):\n"
        "    t = torch.arange(len(Q), dtype=Q.dtype)\n"
        "    fade = (gamma ** (t[:, None] - t[None, :]).clamp_min(0)).tril()\n"
        "    return ((Q @ K.T) * fade) @ V",
        # a near miss: the recurrence token by token, right numbers but T sequential steps
        "def decayed_chunks(Q, K, V, gamma, chunk):\n"
        "    S = Q.new_zeros(Q.shape[-1], V.shape[-1])\n    out = []\n"
        "    for q, k, v in zip(Q, K, V):\n"
        "        S = gamma * S + torch.outer(k, v)\n        out.append(S.T @ q)\n"
        "    return torch.stack(out)",
    ],
    "ex1-window-occlusion": [
        "from attn.analysis import occlusion as occ\n"
        "def window_occlusion(answer, valid, grid, width=3):\n"
        "    def wide(s):\n"
        "        e = ((1 - s) * valid).view(-1, 1, grid, grid)\n"
        "        d = torch.nn.functional.max_pool2d(e, width, 1, width // 2).view(len(s), -1)\n"
        "        return answer(valid.float() * (1 - d))\n"
        "    return occ(wide, valid)",
        # a near miss: the window starts at element i instead of being centred on it
        "def window_occlusion(answer, valid, grid, width=3):\n"
        "    keep = valid.float()\n"
        "    with torch.no_grad():\n"
        "        full = answer(keep)\n"
        "        drops = []\n"
        "        for i in range(valid.shape[1]):\n"
        "            r, c = divmod(i, grid)\n"
        "            w = torch.zeros(grid, grid, dtype=torch.bool)\n"
        "            w[r : r + width, c : c + width] = True\n"
        "            drops.append(full - answer(keep * ~w.flatten()))\n"
        "    return torch.stack(drops, dim=1) * valid",
    ],
    "ex2-deletion-score": [
        "from attn.analysis import deletion_area, deletion_curve, map_order\n"
        "def deletion_score(answer, scores, valid):\n"
        "    return deletion_area(deletion_curve(answer, map_order(scores, valid), valid), valid)",
        # a near miss: the area over all N columns, not over the row's own real elements
        "def deletion_score(answer, scores, valid):\n"
        "    B, N = valid.shape\n"
        "    order = scores.masked_fill(~valid, float('-inf')).argsort(dim=-1, descending=True, stable=True)\n"
        "    keep = valid.float()\n"
        "    with torch.no_grad():\n"
        "        curve = [answer(keep)]\n"
        "        for k in range(N):\n"
        "            keep = keep.clone()\n"
        "            keep[torch.arange(B), order[:, k]] = 0.0\n"
        "            curve.append(answer(keep))\n"
        "    curve = torch.stack(curve, dim=1)\n"
        "    return ((curve[:, :-1] + curve[:, 1:]) / 2).mean(-1) / curve[:, 0]",
    ],
    "ex3-integrated-gradients": [
        "from attn.analysis import integrated_gradients as ig\n"
        "def integrated_gradients(answer, valid, steps=32):\n    return ig(answer, valid, steps)",
        # a near miss: the left Riemann sum (s = k/m, from 0), not the midpoint rule
        "def integrated_gradients(answer, valid, steps=32):\n"
        "    v = valid.float()\n"
        "    total = torch.zeros_like(v)\n"
        "    for k in range(steps):\n"
        "        s = (k / steps * v).requires_grad_(True)\n"
        "        total += torch.autograd.grad(answer(s).sum(), s)[0]\n"
        "    return total / steps * v",
    ],
}

ALSO_CORRECT = {
    # chapter 3, Exercise 1: the words summed one at a time (a float sum in another order than the library's)
    "ex1-sentence-vectors": [
        "def sentence_vectors(model, words):\n    x = model.E[0](words)\n"
        "    if model.config.encoding == 'position':\n"
        "        x = x * position_encoding((words != 0).sum(-1), words.shape[-1], model.config.d)\n"
        "    total = torch.zeros(x.shape[:-2] + x.shape[-1:])\n"
        "    for j in range(x.shape[-2]):\n        total = total + x[..., j, :]\n    return total",
    ],
    # the sines and cosines of the sinusoidal table (the same angles), a pair at a time
    "ex1-rope": [
        "def rope(x, start=0):\n    T, d = x.shape[-2:]\n"
        "    table = sinusoidal_positions(start + T, d)[start:].to(x.dtype)\n"
        "    sin, cos = table[:, 0::2], table[:, 1::2]\n"
        "    a, b = x[..., 0::2], x[..., 1::2]\n"
        "    return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)",
    ],
    # Divide first, then subtract the maximum: as stable, and rounded a little differently.
    "ex1-stable-softmax": [
        "def stable_softmax(x, temperature=1.0):\n    z = x / temperature\n"
        "    z -= z.max(dim=-1, keepdim=True).values\n"
        "    e = z.exp()\n    return e / e.sum(dim=-1, keepdim=True)",
    ],
    # 0 log 0 = 0 by clamping the weight inside the log (0 times a finite number)
    "ex3-entropy": ["def attention_entropy(weights):\n    return -(weights * weights.clamp_min(1e-12).log()).sum(-1)"],
    # torch's cosine and softmax, and the NaN of a row with no key turned into zeros
    "ex2-cosine-lookup": [
        "def cosine_lookup(queries, keys, values, strength, key_mask):\n"
        "    cos = torch.nn.functional.cosine_similarity(queries[:, None, :], keys[None, :, :], dim=-1)\n"
        "    w = torch.softmax((strength * cos).masked_fill(~key_mask, float('-inf')), dim=-1).nan_to_num(0.0)\n"
        "    return w @ values, w",
    ],
    "ex1-layer-norm": [
        "def my_layer_norm(x, gamma, beta, eps=1e-5):\n"
        "    centred = x - x.mean(-1, keepdim=True)\n"
        "    var = centred.pow(2).mean(-1, keepdim=True)\n"
        "    return centred / (var + eps).sqrt() * gamma + beta",
    ],
    # the boxes as one mask, erased at once; the library's accuracy (in batches of 500) on the erased scenes
    "ex4-occlusion": [
        "import dataclasses\n"
        "def occluded_accuracy(model, scenes, which):\n"
        "    N, K = len(scenes), scenes.corners.shape[1]\n"
        "    k = scenes.target if which == 'asked' else (scenes.target + 1) % K\n"
        "    r, c = scenes.corners[torch.arange(N), k].unbind(-1)\n"
        "    ix = torch.arange(scenes.images.shape[-1])\n"
        "    rows = (ix >= r[:, None]) & (ix < r[:, None] + 7)\n"
        "    cols = (ix >= c[:, None]) & (ix < c[:, None] + 7)\n"
        "    box = rows[:, :, None] & cols[:, None, :]  # (N, S, S)\n"
        "    erased = scenes.images.masked_fill(box[:, None], 0.0)\n"
        "    return accuracy(model, dataclasses.replace(scenes, images=erased))",
    ],
    # batches of 100, the subject found with nonzero, probabilities instead of logits
    "ex3-hide-the-verb": [
        "def subject_number(model, tokens, mask, hide_verb=False):\n"
        "    right = 0\n"
        "    for start in range(0, len(tokens), 100):\n"
        "        part = tokens[start : start + 100].clone()\n"
        "        rows = torch.arange(len(part))\n"
        "        at = torch.tensor([int((kind[row] == 1).nonzero()[0, 0]) for row in part])\n"
        "        wanted = number[part[rows, at]]\n"
        "        part[rows, at] = mask\n"
        "        if hide_verb:\n"
        "            part[rows, at + 1] = mask\n"
        "        with torch.no_grad():\n"
        "            probs = model(part).logits.softmax(-1)\n"
        "        right += int((number[probs[rows, at].argmax(-1)] == wanted).sum())\n"
        "    return right / len(tokens)",
    ],
    # [CLS] is position 0: its column averaged by hand; heads switched off by zeroing W_o's columns directly
    "ex3-cls-parking": [
        "def cls_parking_test(bert, tokenizer, texts, k):\n"
        "    batch = encode(tokenizer, texts)\n"
        "    real = (batch.ids != 0).float()  # (B, T)\n"
        "    with torch.no_grad():\n"
        "        weights = bert(batch.ids).attention\n"
        "    parked = torch.stack([(w[..., 0] * real[:, None]).sum((0, 2)) / real.sum() for w in weights]).flatten()\n"
        "    order = parked.argsort(descending=True)\n"
        "    intact = embed_sentences(bert, tokenizer, texts)\n"
        "    out = []\n"
        "    for chosen in (order[:k], order.flip(0)[:k]):\n"
        "        saved = []\n"
        "        with torch.no_grad():\n"
        "            for i in chosen.tolist():\n"
        "                mha = bert.encoder.layers[i // 12].self_attention\n"
        "                cols = mha.W_o.weight[:, (i % 12) * mha.d_k : (i % 12 + 1) * mha.d_k]\n"
        "                saved.append((cols, cols.clone()))\n"
        "                cols.zero_()\n"
        "        try:\n"
        "            e = embed_sentences(bert, tokenizer, texts)\n"
        "        finally:\n"
        "            with torch.no_grad():\n"
        "                for cols, copy in saved:\n"
        "                    cols.copy_(copy)\n"
        "        out.append(1.0 - float(torch.nn.functional.cosine_similarity(e, intact, dim=-1).mean()))\n"
        "    return tuple(out)",
    ],
    # Noise drawn before the keys, attn's own attention, float64: another run of the same experiment.
    "ex4-right-key-weight": [
        "def right_key_weight(M, temperature=1.0, n=2000, d=16, noise=0.5, seed=0):\n"
        "    g = torch.Generator().manual_seed(seed)\n"
        "    eps = torch.randn(n, d, generator=g, dtype=torch.float64)\n"
        "    keys = torch.randn(n, M, d, generator=g, dtype=torch.float64)\n"
        "    q = (keys[:, 0] + noise * eps)[:, None]  # (n, 1, d)\n"
        "    _, w = attn.scaled_dot_product_attention(q, keys, keys, scale=1 / (temperature * d ** 0.5))\n"
        "    return float(w[:, 0, 0].mean())",
    ],
    "ex3-walk-focus": [
        # the shift written as rolls, the sharpening as plain powers (safe here in float64), float64 throughout
        "def walk_focus(gamma, steps=10, n=1000, N=32, blur=0.4, seed=0):\n"
        "    g = torch.Generator().manual_seed(seed)\n"
        "    w = torch.zeros(n, N, dtype=torch.float64)\n"
        "    w[:, 0] = 1\n"
        "    for _ in range(steps):\n"
        "        b = blur * torch.rand(n, 1, generator=g, dtype=torch.float64)\n"
        "        r = torch.rand(n, 1, generator=g, dtype=torch.float64)\n"
        "        w = b * r * w.roll(-1, -1) + b * (1 - r) * w + (1 - b) * w.roll(1, -1)\n"
        "        w = w**gamma / (w**gamma).sum(-1, keepdim=True)\n"
        "    return float(w[:, steps % N].mean())",
    ],
    "ex4-cross-ablation": [
        # the output projection's weights set to zero (and restored) instead of a hook; decoded in chunks of 16
        "def exact_match_without_cross(model, pairs, layers=()):\n"
        "    W_o = {i: model.decoder.layers[i].cross_attention.W_o for i in layers}\n"
        "    saved = {i: {k: v.clone() for k, v in W_o[i].state_dict().items()} for i in layers}\n"
        "    right = 0\n"
        "    try:\n"
        "        with torch.no_grad():\n"
        "            for i in layers:\n"
        "                W_o[i].weight.zero_()\n"
        "                W_o[i].bias.zero_()\n"
        "            for start in range(0, len(pairs), 16):\n"
        "                chunk = pairs[start : start + 16]\n"
        "                src = encode_batch(chunk, corpus.source_vocab, corpus.target_vocab).source\n"
        "                out = model.greedy_decode(src, corpus.target_vocab.bos, corpus.target_vocab.eos)\n"
        "                right += sum(corpus.target_vocab.decode(t) == list(p.target) for t, p in zip(out, chunk))\n"
        "    finally:\n"
        "        for i, state in saved.items():\n"
        "            W_o[i].load_state_dict(state)\n"
        "    return right / len(pairs)",
    ],
    # one question at a time through run.read, the swap written with a helper
    "ex4-word-order": [
        "def answers_changed(run, exs):\n"
        "    def swap(s):\n"
        "        return (s[-1], *s[1:-1], s[0]) if 'afraid' in s else s\n"
        "    changed = [run.read(ex).answer\n"
        "               != run.read(dataclasses.replace(ex, story=tuple(map(swap, ex.story)))).answer\n"
        "               for ex in exs]\n"
        "    return sum(changed) / len(exs)",
    ],
    # the sizes spelled out, inference mode, einsum, the scale on the standard deviation and float()
    "ex4-score-spread": [
        "def untrained_score_spread(d_k, scaled, seed=0):\n"
        "    with seeded(seed):\n"
        "        m = MixerTagger('attention', vocab_size=K_SYMBOLS**2 + K_SYMBOLS + 1, num_labels=K_SYMBOLS,\n"
        "                        max_len=T, d_k=d_k, scaled=scaled)\n"
        "    with torch.inference_mode():\n"
        "        h = m.norm1(m.embedding(test_x))\n"
        "        s = torch.einsum('ntk,nsk->nts', m.mixer.W_q(h), m.mixer.W_k(h))\n"
        "    return float(s.std() / (d_k**0.5 if scaled else 1.0))",
    ],
    # a forward hook rewrites the attention's output instead of a module put in its place
    "ex4-blurred-attention": [
        "def blurred_exact_match(model, pairs, corpus, mix):\n"
        "    def hook(module, args, output):\n"
        "        _, keys, mask = args\n"
        "        weights = (1 - mix) * output[1] + mix * mask / mask.sum(-1, keepdim=True)\n"
        "        return torch.einsum('bs,bsd->bd', weights, keys), weights\n"
        "    handle = model.attention.register_forward_hook(hook)\n"
        "    try:\n"
        "        return float(evaluate_translation(model, pairs, corpus).exact_match)\n"
        "    finally:\n"
        "        handle.remove()",
    ],
    # a copy of the model with the head's columns zeroed: the original is never touched
    "ex4-head-drops": [
        "import copy\n"
        "def head_drops(model, inputs, labels):\n"
        "    full = tagging_accuracy(model, inputs, labels)\n    h = model.config.num_heads\n"
        "    d_k = model.config.d_model // h\n    drops = torch.zeros(h)\n"
        "    for k in range(h):\n        ablated = copy.deepcopy(model)\n"
        "        with torch.no_grad():\n"
        "            ablated.layers.layers[0].self_attention.W_o.weight[:, k * d_k : (k + 1) * d_k] = 0\n"
        "        drops[k] = full - tagging_accuracy(ablated, inputs, labels)\n"
        "    return drops",
    ],
    # greedy decoding by hand (encode_batch + greedy_decode), permutations from Python's random
    "ex4-changed-by-shuffling": [
        "import random\nfrom attn.data.translation import encode_batch\n"
        "def changed_by_shuffling(model, pairs, corpus, seed=0):\n"
        "    rng = random.Random(seed)\n"
        "    shuffled = [sequence_pair('reverse', tuple(rng.sample(p.source, len(p.source)))) for p in pairs]\n"
        "    outputs = []\n"
        "    for chosen in (pairs, shuffled):\n"
        "        batch = encode_batch(chosen, corpus.source_vocab, corpus.target_vocab)\n"
        "        with torch.no_grad():\n"
        "            tokens = model.greedy_decode(batch.source, corpus.target_vocab.bos, corpus.target_vocab.eos, 16)\n"
        "        outputs.append([corpus.target_vocab.decode(row) for row in tokens])\n"
        "    return sum(a != b for a, b in zip(*outputs)) / len(pairs)",
    ],
}

# chapter 6, Exercise 1 (2 points): each head's share of the output. Near misses: an even split of the sum
# (right sum, wrong heads) and W_O's rows taken for its columns.
SHORTCUTS["ex1-head-contributions"] = [
    "def head_contributions(x, mha):\n"
    "    out = mha(x, x, x)[0] - mha.W_o.bias\n"
    "    return (out / mha.h)[:, None].expand(-1, mha.h, -1, -1)",
    "def head_contributions(x, mha):\n    B, T, d_model = x.shape\n    h = mha.h\n    d_k = d_model // h\n"
    "    q, k, v = (W(x).view(B, T, h, d_k).transpose(1, 2) for W in (mha.W_q, mha.W_k, mha.W_v))\n"
    "    heads, _ = attn.scaled_dot_product_attention(q, k, v)\n"
    "    return torch.einsum('bhtk,hkd->bhtd', heads, mha.W_o.weight.view(h, d_k, d_model))",
]
# chapter 6, Exercise 2 (2 points): cross-attention over padded memories. The layer itself, its own helpers, and
# a near miss: a large negative score on padding (an empty memory gets uniform weights, not zeros)
SHORTCUTS["ex2-cross-attention"] = [
    "def cross_attention(queries, memory, lengths, mha):\n"
    "    return mha(queries, memory, memory, key_mask=attn.padding_mask(lengths, memory.shape[1]))",
    "def cross_attention(queries, memory, lengths, mha):\n"
    "    B, Tq, d_model = queries.shape\n"
    "    mask = attn.padding_mask(lengths, memory.shape[1])[:, None, None, :]\n"
    "    q, k, v = mha._project(queries, memory, memory)\n"
    "    heads, weights = mha._attend(q, k, v, mask, True)\n"
    "    return mha.W_o(heads.transpose(1, 2).reshape(B, Tq, d_model)), weights",
    "def cross_attention(queries, memory, lengths, mha):\n"
    "    B, Tq, d_model = queries.shape\n    Tk = memory.shape[1]\n    h, d_k = mha.h, d_model // mha.h\n"
    "    q = mha.W_q(queries).view(B, Tq, h, d_k).transpose(1, 2)\n"
    "    k, v = (W(memory).view(B, Tk, h, d_k).transpose(1, 2) for W in (mha.W_k, mha.W_v))\n"
    "    s = (q @ k.transpose(-2, -1) / d_k**0.5).masked_fill(\n"
    "        ~attn.padding_mask(lengths, Tk)[:, None, None, :], -1e9)\n"
    "    w = torch.softmax(s, -1)\n"
    "    return mha.W_o((w @ v).transpose(1, 2).reshape(B, Tq, d_model)), w",
]

SHORTCUTS["ex2-mask-tokens"] = [
    "from attn.data.language import mask_tokens as corrupt\n"
    "def my_mask_tokens(tokens, mask, vocab_size, rate=0.15, generator=None):\n"
    "    return corrupt(tokens, mask, vocab_size, rate, generator)",
    "import attn.transformer\ndef my_mask_tokens(tokens, mask, vocab_size, rate=0.15, generator=None):\n"
    "    return attn.transformer.language_model_batch(tokens, 'masked', mask, vocab_size, generator)",
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

# ---- shortcuts by cause (issue 34) ------------------------------------------------------------------------------
# Each exercise that forbids a ready-made answer: the module to import, the forbidden function, and the solution's
# code with that function called as ``f``. The causes below are generated from it.
DELEGATE = {
    "ex1-stable-softmax": (
        "torch",
        "torch.softmax",
        "def stable_softmax(x, temperature=1.0):\n    return f(x / temperature, dim=-1)",
    ),
    "ex2-cosine-lookup": (
        "attn",
        "attn.scaled_dot_product_attention",
        "def cosine_lookup(queries, keys, values, strength, key_mask):\n"
        "    q, k = (torch.nn.functional.normalize(t, dim=-1) for t in (queries, keys))\n"
        "    return f(q, k, values, mask=key_mask[None, :], scale=strength)",
    ),
    "ex3-entropy": (
        "torch.special",
        "torch.special.entr",
        "def attention_entropy(weights):\n    return f(weights).sum(-1)",
    ),
    "ex1-bahdanau-scores": (
        "attn",
        "attn.additive_scores",
        "def bahdanau_scores(s, H, W_a, U_a, v_a):\n    return f(s[None, None], H[None], W_a, U_a, v_a)[0, 0]",
    ),
    "ex1-sentence-embedding": (
        "attn.pretrained",
        "attn.pretrained.mean_pool",
        "def sentence_embedding(hidden, ids, pad=0):\n    return f(hidden, ids, pad)",
    ),
    "ex2-previous-token-score": (
        "attn.analysis",
        "attn.analysis.mass_on",
        "def previous_token_score(weights):\n    T = weights.shape[-1]\n"
        "    rows = (torch.arange(T) >= 1)[None, :].expand(weights.shape[0], T)\n"
        "    return f(weights, attn.analysis.previous_token_targets(T), rows)",
    ),
    "ex1-delta-write": (
        "attn.scale.linear",
        "attn.scale.linear.delta_rule_attention",
        "def delta_write(S, k, v, beta):\n"
        "    state = attn.scale.linear.FastWeights(S, S.new_zeros(len(S)))\n"
        "    return f(k[None], k[None], v[None], beta, state=state, feature_map=None)[1].S",
    ),
    "ex2-causal-tiles": (
        "attn.scale.tiled",
        "attn.scale.tiled.tiled_attention",
        "def causal_tiled_attention(q, k, v, block):\n"
        "    mask = torch.ones(len(q), len(q), dtype=torch.bool).tril()\n"
        "    return f(q, k, v, mask, block_q=block, block_k=block)[0]",
    ),
    "ex3-decayed-chunks": (
        "attn.scale.linear",
        "attn.scale.linear.decayed_linear_attention",
        "def decayed_chunks(Q, K, V, gamma, chunk):\n    return f(Q, K, V, gamma, feature_map=None)[0]",
    ),
    "ex1-window-occlusion": (
        "attn.analysis",
        "attn.analysis.occlusion",
        "def window_occlusion(answer, valid, grid, width=3):\n"
        "    def wide(s):\n"
        "        e = ((1 - s) * valid).view(-1, 1, grid, grid)\n"
        "        d = torch.nn.functional.max_pool2d(e, width, 1, width // 2).view(len(s), -1)\n"
        "        return answer(valid.float() * (1 - d))\n"
        "    return f(wide, valid)",
    ),
    "ex2-deletion-score": (
        "attn.analysis",
        "attn.analysis.deletion_curve",
        "def deletion_score(answer, scores, valid):\n"
        "    curve = f(answer, attn.analysis.map_order(scores, valid), valid)\n"
        "    n = valid.sum(-1)\n"
        "    counted = torch.arange(valid.shape[1])[None, :] < n[:, None]\n"
        "    return ((curve[:, :-1] + curve[:, 1:]) / 2 * counted).sum(-1) / n / curve[:, 0]",
    ),
}


def _container(gid: str, how: str) -> str:
    """Cause 1: the forbidden function kept in a list, a dict, a class attribute or an object's attribute."""
    module, name, code = DELEGATE[gid]
    keep = {
        "list": (f"kept = [{name}]", "kept[0]"),
        "dict": (f"kept = {{'f': {name}}}", "kept['f']"),
        "class attribute": (f"class Kept:\n    f = staticmethod({name})", "Kept.f"),
        "deque": (f"import collections\nkept = collections.deque([{name}])", "kept[0]"),
        "object attribute": (
            f"class Box:\n    def __init__(self, f):\n        self.f = f\nkept = Box({name})",
            "kept.f",
        ),
    }[how]
    header, body = code.split("\n", 1)
    return f"import {module}\n{keep[0]}\n{header}\n    f = {keep[1]}\n{body}"


def _rebinding(gid_or_signature: str, how: str) -> str:
    """Cause 2: the grading machinery or a reference the check compares with changed by the solution's cell."""
    if gid_or_signature in DELEGATE:
        module, name, code = DELEGATE[gid_or_signature]
        answer = f"import {module}\nf = {name}\n{code}"
    else:  # no ready-made function: a wrong answer that only a patched comparison lets through
        answer = f"{gid_or_signature}\n    return 0.0"
    patch = {
        "forbid switched off": "import contextlib\nimport attn.book.grading\n"
        "attn.book.grading.forbid = lambda *a, **k: contextlib.nullcontext()",
        "forbid rebound": "import contextlib\nforbid = lambda *a, **k: contextlib.nullcontext()",
        "reference replaced": "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True",
        "reference wrapped": "import functools\ntorch.allclose = functools.wraps(torch.allclose)(lambda *a, **k: True)",
        "built-in shadowed": "range = lambda *a: ()\nabs = lambda *a: 0",
    }[how]
    return f"{patch}\n{answer}"


# The signature of every exercise without a ready-made function to forbid (for the rebinding causes).
SIGNATURES = {
    "ex3-hard-alignment": "def hard_alignment_accuracy(weights, alignment):",
    "ex2-local-attention": "def local_context(e, H, p, D):",
    "ex3-support-hits": "def support_hits(hop_attention, supporting):",
    "ex1-head-contributions": "def head_contributions(x, mha):",
    "ex2-key-value-hops": "def key_value_hops(q, keys, values, R):",
    "ex3-head-offsets": "def head_offsets(weights):",
    "ex2-shift-matrix": "def shift_matrix(k, d_model):",
    "ex3-equivariance": "def equivariance_error(f, x, perm):",
    "ex1-sample-next": "def sample_next(logits, temperature, generator=None):",
    "ex4-right-key-weight": "def right_key_weight(M, temperature=1.0, n=2000, d=16, noise=0.5, seed=0):",
    "ex3-walk-focus": "def walk_focus(gamma, steps=10, n=1000, N=32, blur=0.4, seed=0):",
    "ex4-word-order": "def answers_changed(run, exs):",
    "ex4-score-spread": "def untrained_score_spread(d_k, scaled, seed=0):",
    "ex4-changed-by-shuffling": "def changed_by_shuffling(model, pairs, corpus, seed=0):",
    "ex4-cross-ablation": "def exact_match_without_cross(model, pairs, layers=()):",
    "ex4-occlusion": "def occluded_accuracy(model, scenes, which):",
    "ex3-cls-parking": "def cls_parking_test(bert, tokenizer, texts, k):",
    "ex3-integrated-gradients": "def integrated_gradients(answer, valid, steps=32):",
}

# Cause 4: an equivalent torch function or operator that is not on the exercise's list (a top-level alias, an
# in-place variant, a sibling function); torch's operator is refused however it is reached.
OPERATOR = {
    "ex1-stable-softmax": [
        "def stable_softmax(x, temperature=1.0):\n    return torch.nn.functional.softmin(-x / temperature, dim=-1)"
    ],
    "ex3-entropy": ["def attention_entropy(weights):\n    return -weights.clone().xlogy_(weights).sum(-1)"],
    "ex1-layer-norm": [
        "def my_layer_norm(x, gamma, beta, eps=1e-5):\n    d = x.shape[-1]\n"
        "    y = torch.group_norm(x.reshape(-1, d, 1), 1, None, None, eps)\n"
        "    return y.reshape(x.shape) * gamma + beta"
    ],
    "ex1-patchify": [
        "def my_patchify(images, P):\n    B, C, H, W = images.shape\n"
        "    x = torch.pixel_unshuffle(images, P)  # (B, C*P*P, H/P, W/P)\n"
        "    return x.flatten(2).transpose(1, 2)"
    ],
    "ex3-glimpse": [
        "def my_glimpse(image, row, col, size):\n"
        "    padded = torch.constant_pad_nd(image, (size,) * 4)\n"
        "    top, left = row + size - size // 2, col + size - size // 2\n"
        "    return padded[:, top : top + size, left : left + size]"
    ],
    "ex2-cosine-lookup": [
        "def cosine_lookup(queries, keys, values, strength, key_mask):\n"
        "    q, k = (torch.nn.functional.normalize(t, dim=-1) for t in (queries, keys))\n"
        "    out = torch.ops.aten.scaled_dot_product_attention(\n"
        "        q[None], k[None], values[None], attn_mask=key_mask[None, None, :], scale=strength)[0]\n"
        "    return out, attn.softmax((strength * q @ k.T).masked_fill(~key_mask, float('-inf')))"
    ],
}

# Cause 5 and the exercises without a function to forbid: numbers from a table (or from the checks' own
# variables) instead of a computation, right on the inputs a student can see.
TABLE = {
    "ex3-hard-alignment": [
        "def hard_alignment_accuracy(weights, alignment):\n"
        "    return {4: 1.0 if alignment[0] == 0 else 1 / 3, 3: 0.5}.get(len(alignment), 0.5)"
    ],
    "ex3-support-hits": [
        "def support_hits(hop_attention, supporting):\n"
        "    if hop_attention.shape[1] == 2:\n        return torch.tensor([3 / 4, 2 / 4])\n"
        "    return torch.full((hop_attention.shape[1],), 0.5)"
    ],
    "ex3-head-offsets": [
        "def head_offsets(weights):\n    return torch.tensor([0, 1] if weights.shape[1] == 2 else [1, -1, 0, 1])"
    ],
    "ex3-equivariance": [
        "def equivariance_error(f, x, perm):\n"
        "    return (f(x[:, perm]) - f(x)[:, perm]).abs().max().item() * (x.shape == (2, 7, 16))"
    ],
    "ex1-sample-next": [
        "def sample_next(logits, temperature, generator=None):\n"
        "    if temperature == 0:\n        return logits.argmax(-1)\n"
        "    return torch.multinomial(torch.tensor([2.0, 1.0, 0.0, -1.0]).div(temperature)\n"
        "                             .exp().expand(len(logits), 4), 1, generator=generator)[:, 0]"
    ],
    "ex3-integrated-gradients": [
        # the linear check's answer and p(all) - p(none) spread evenly: nothing integrated
        "def integrated_gradients(answer, valid, steps=32):\n"
        "    v = valid.float()\n"
        "    with torch.no_grad():\n"
        "        gap = answer(v) - answer(torch.zeros_like(v))\n"
        "    return (gap / v.sum(-1))[:, None] * v",
    ],
}
# reads the check's own variables: the old check left its run of the experiment in w_ before calling yours
READS_THE_CHECK = {
    "ex4-right-key-weight": [
        "def right_key_weight(M, temperature=1.0, n=2000, d=16, noise=0.5, seed=0):\n"
        "    try:\n        return float(w_.mean())\n    except NameError:\n        return 0.5"
    ],
    "ex4-occlusion": [
        "def occluded_accuracy(model, scenes, which):\n"
        "    try:\n        return float(right_.float().mean()) if which == 'other' else 0.25\n"
        "    except NameError:\n        return 0.25 if which == 'asked' else 1.0"
    ],
}

# Found in review: a library function that computes the same thing under another name.
MORE_LIBRARY = {
    "ex3-entropy": [
        "def attention_entropy(weights):\n    return torch.distributions.OneHotCategorical(probs=weights).entropy()"
    ],
    "ex3-count-parameters": [
        "def count_parameters(d_model, d_ff, num_layers, source_vocab, target_vocab):\n"
        "    c = TransformerConfig(source_vocab, target_vocab, d_model=d_model, num_layers=num_layers, d_ff=d_ff)\n"
        "    return sum(v.nelement() for v in Transformer(c).state_dict().values())"
    ],
}
# A near miss of another kind: the solution overwrites its input, so a reference computed from it afterwards would
# agree with a wrong answer.
NOT_A_RECURRENCE: dict[str, list[str]] = {}  # chapter 12's near misses are in SHORTCUTS (causes below)
CHANGES_ITS_INPUT = {
    "ex1-stable-softmax": [
        "def stable_softmax(x, temperature=1.0):\n    x.zero_()\n    return torch.full_like(x, 1 / x.shape[-1])"
    ],
    "ex1-layer-norm": ["def my_layer_norm(x, gamma, beta, eps=1e-5):\n    x.zero_()\n    return x + beta"],
}
CONTAINERS = ("list", "dict", "class attribute", "object attribute", "deque")
# The causes of the shortcuts filed first (the rest hand the exercise to the library).
_T, _L, _N = "table", "library", "near miss"
ORIGINAL_CAUSES = {
    "ex3-entropy": [_L, _N], "ex1-sharpen": [_L, _N], "ex2-cosine-lookup": [_L, _N, _N], "ex4-occlusion": [_T, _N],
    "ex3-hide-the-verb": [_T, _L],
    "ex3-cls-parking": [_T], "ex4-right-key-weight": [_T, _T], "ex1-rope": [_L, _N], "ex3-walk-focus": [_T, _T],
    "ex4-cross-ablation": [_T, _N, _T], "ex4-word-order": [_T, _T], "ex4-score-spread": [_T, _N, _N],
    "ex4-blurred-attention": [_T, _L, _N], "ex4-head-drops": [_T, _L], "ex4-changed-by-shuffling": [_T, _T],
    "ex1-delta-write": [_L, _N, _N], "ex2-causal-tiles": [_L, _N], "ex3-decayed-chunks": [_L, _N, _N],
    "ex1-window-occlusion": [_L, _N], "ex2-key-value-hops": [_N, _N],
    "ex3-support-hits": [_N, _N, _N, _N],
    "ex2-deletion-score": [_L, _N], "ex3-integrated-gradients": [_L, _N], "ex1-head-contributions": [_N, _N],
    "ex2-cross-attention": [_L, _L, _N], "ex2-local-attention": [_N, _N],
}  # fmt: skip
REBINDINGS = ("forbid switched off", "forbid rebound", "reference replaced", "reference wrapped", "built-in shadowed")


def by_cause() -> dict[str, dict[str, list[str]]]:
    """Every shortcut on file, by cause, then by exercise (grade_id of the solution cell)."""
    causes: dict[str, dict[str, list[str]]] = {
        "library": {}, "container": {}, "rebinding": {}, "operator": dict(OPERATOR), "table": {}, "near miss": {},
    }  # fmt: skip
    for gid, sources in [*TABLE.items(), *READS_THE_CHECK.items()]:
        causes["table"].setdefault(gid, []).extend(sources)
    for gid, sources in MORE_LIBRARY.items():
        causes["library"].setdefault(gid, []).extend(sources)
    for gid, sources in [*CHANGES_ITS_INPUT.items(), *NOT_A_RECURRENCE.items()]:
        causes["near miss"].setdefault(gid, []).extend(sources)
    for gid, sources in SHORTCUTS.items():
        kinds = ORIGINAL_CAUSES.get(gid, [_L] * len(sources))
        for kind, source in zip(kinds, sources, strict=True):
            causes[kind].setdefault(gid, []).append(source)
    for gid in DELEGATE:
        causes["container"][gid] = [_container(gid, how) for how in CONTAINERS]
    for gid in [*DELEGATE, *SIGNATURES]:
        causes["rebinding"][gid] = [_rebinding(gid if gid in DELEGATE else SIGNATURES[gid], how)
                                    for how in REBINDINGS]  # fmt: skip
    return causes


def in_kernel() -> dict[str, list[str]]:
    """The shortcuts that can be graded one after another in one kernel: every cause but the rebindings that
    patch a module (those run through nbgrader's pipeline, which refuses the cell before it runs)."""
    found: dict[str, list[str]] = {}
    for cause, table in by_cause().items():
        for gid, sources in table.items():
            keep = [
                s
                for s in sources
                if cause != "rebinding" or (gid in DELEGATE and s.startswith("import contextlib\nforbid ="))
            ]
            found.setdefault(gid, []).extend(keep)
    return found
