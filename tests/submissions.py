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
        # kept where a reader of containers does not look: a weak-value dict, a list nested 30 deep
        "import weakref\n_kept = weakref.WeakValueDictionary({'f': attn.softmax})\n"
        "def stable_softmax(x, temperature=1.0):\n    return _kept['f'](x, temperature=temperature)",
        "_box = [attn.softmax]\nfor _ in range(30):\n    _box = [_box]\n"
        "def stable_softmax(x, temperature=1.0):\n    f = _box\n    while isinstance(f, list):\n        f = f[0]\n"
        "    return f(x, temperature=temperature)",
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
    # chapter 2, Exercise 3 (1 point): the alignment error rate of the links weights >= threshold. Near misses: one
    # link per row, the largest (Luong et al.'s hard alignment); the words without a source position left out (their
    # links count against A); a strict threshold (a weight equal to it is a link); P = `possible` only (P holds S)
    "ex3-hard-alignment": [
        "def alignment_error_rate(weights, sure, possible, threshold):\n"
        "    links = {(t, int(row.argmax())) for t, row in enumerate(weights)}\n"
        "    gold = {(t, s) for t, s in enumerate(sure) if s is not None}\n"
        "    hits = len(links & gold) + len(links & (gold | set(possible)))\n"
        "    return 1 - hits / (len(links) + len(gold))",
        "def alignment_error_rate(weights, sure, possible, threshold):\n"
        "    links = {(t, s) for t, s in (weights >= threshold).nonzero().tolist() if sure[t] is not None}\n"
        "    gold = {(t, s) for t, s in enumerate(sure) if s is not None}\n"
        "    hits = len(links & gold) + len(links & (gold | set(possible)))\n"
        "    return 1 - hits / (len(links) + len(gold))",
        "def alignment_error_rate(weights, sure, possible, threshold):\n"
        "    links = {(t, s) for t, s in (weights > threshold).nonzero().tolist()}\n"
        "    gold = {(t, s) for t, s in enumerate(sure) if s is not None}\n"
        "    hits = len(links & gold) + len(links & (gold | set(possible)))\n"
        "    return 1 - hits / (len(links) + len(gold))",
        "def alignment_error_rate(weights, sure, possible, threshold):\n"
        "    links = {(t, s) for t, s in (weights >= threshold).nonzero().tolist()}\n"
        "    gold = {(t, s) for t, s in enumerate(sure) if s is not None}\n"
        "    hits = len(links & gold) + len(links & set(possible))\n"
        "    return 1 - hits / (len(links) + len(gold))",
    ],
    # chapter 3, Exercise 1 (2 points): sentence vectors with the paper's printed position encoding. The book's
    # position_encoding (forbidden) gives each word's place j/J; near misses: J the padded width; j and k from 0;
    # padding left to row 0 of the table; half the book's centred form; 0/0 for a sentence of padding only
    "ex1-sentence-vectors": [
        # library: the book's position_encoding with d = 2 gives each word's place b_j = j/J - (J+1)/(2J)
        "from attn.memn2n import position_encoding as pe\n"
        "def printed_sentence_vectors(weight, words):\n"
        "    n = (words != 0).sum(-1)\n    J = n.clamp_min(1)[..., None].float()\n"
        "    x = (pe(n, words.shape[-1], 2)[..., 1] - 1 + (J + 1) / (2 * J))[..., None]\n"
        "    k = torch.arange(1, weight.shape[1] + 1) / weight.shape[1]\n"
        "    return (((1 - x) - k * (1 - 2 * x)) * (words != 0)[..., None] * weight[words]).sum(-2)",
        "def printed_sentence_vectors(weight, words):\n    J = words.shape[-1]\n"
        "    j = torch.arange(1, J + 1)[:, None]\n    k = torch.arange(1, weight.shape[1] + 1) / weight.shape[1]\n"
        "    l_ = (1 - j / J) - k * (1 - 2 * j / J)\n"
        "    return (l_ * (words != 0)[..., None] * weight[words]).sum(-2)",
        "def printed_sentence_vectors(weight, words):\n"
        "    J = (words != 0).sum(-1, keepdim=True).clamp_min(1)[..., None]\n"
        "    j = torch.arange(words.shape[-1])[:, None]\n    k = torch.arange(weight.shape[1]) / weight.shape[1]\n"
        "    l_ = (1 - j / J) - k * (1 - 2 * j / J)\n"
        "    return (l_ * (words != 0)[..., None] * weight[words]).sum(-2)",
        "def printed_sentence_vectors(weight, words):\n"
        "    J = (words != 0).sum(-1, keepdim=True).clamp_min(1)[..., None]\n"
        "    j = torch.arange(1, words.shape[-1] + 1)[:, None]\n"
        "    k = torch.arange(1, weight.shape[1] + 1) / weight.shape[1]\n"
        "    return (((1 - j / J) - k * (1 - 2 * j / J)) * weight[words]).sum(-2)",
        "def printed_sentence_vectors(weight, words):\n"
        "    J = (words != 0).sum(-1, keepdim=True).clamp_min(1)[..., None]\n"
        "    j = torch.arange(1, words.shape[-1] + 1)[:, None]\n    d = weight.shape[1]\n"
        "    k = torch.arange(1, d + 1)\n"
        "    l_ = (1 + 4 * (k - (d + 1) / 2) * (j - (J + 1) / 2) / (d * J)) / 2\n"
        "    return (l_ * (words != 0)[..., None] * weight[words]).sum(-2)",
        "def printed_sentence_vectors(weight, words):\n"
        "    J = (words != 0).sum(-1, keepdim=True)[..., None]\n"
        "    j = torch.arange(1, words.shape[-1] + 1)[:, None]\n"
        "    k = torch.arange(1, weight.shape[1] + 1) / weight.shape[1]\n"
        "    l_ = (1 - j / J) - k * (1 - 2 * j / J)\n"
        "    return (l_ * (words != 0)[..., None] * weight[words]).sum(-2)",
    ],
    # chapter 3, Exercise 3 (1 point): a hop's weights when the empty slots of a memory_size memory take part in
    # the softmax, scoring 0. Near misses: no shift (e^1000 overflows); the shift by the largest real score only
    # (e^999 for the empty slots); memory_size - M empty slots (the padded ones forgotten); the chapter's read (no
    # empty slot); the empty slots left unshifted; the shift clamped at 0 in a full memory (0/0)
    "ex3-empty-slots": [
        "def weights_with_empty(scores, lengths, memory_size):\n"
        "    real = torch.arange(scores.shape[1]) < lengths[:, None]\n"
        "    e = scores.exp() * real\n    empty = (memory_size - lengths[:, None]).to(e.dtype)\n"
        "    total = e.sum(-1, keepdim=True) + empty\n    return e / total, (empty / total)[:, 0]",
        "def weights_with_empty(scores, lengths, memory_size):\n"
        "    real = torch.arange(scores.shape[1]) < lengths[:, None]\n"
        "    s = scores.masked_fill(~real, float('-inf'))\n    top = s.amax(-1, keepdim=True)\n"
        "    e = (s - top).exp()\n    empty = (memory_size - lengths[:, None]) * (-top).exp()\n"
        "    total = e.sum(-1, keepdim=True) + empty\n    return e / total, (empty / total)[:, 0]",
        "def weights_with_empty(scores, lengths, memory_size):\n"
        "    real = torch.arange(scores.shape[1]) < lengths[:, None]\n"
        "    s = scores.masked_fill(~real, float('-inf'))\n    top = s.amax(-1, keepdim=True).clamp_min(0.0)\n"
        "    e = (s - top).exp()\n    empty = (memory_size - scores.shape[1]) * (-top).exp()\n"
        "    total = e.sum(-1, keepdim=True) + empty\n    return e / total, (empty / total)[:, 0]",
        "def weights_with_empty(scores, lengths, memory_size):\n"
        "    real = torch.arange(scores.shape[1]) < lengths[:, None]\n"
        "    p = torch.softmax(scores.masked_fill(~real, float('-inf')), -1)\n"
        "    return p, torch.zeros(len(scores), dtype=scores.dtype)",
        "def weights_with_empty(scores, lengths, memory_size):\n"
        "    real = torch.arange(scores.shape[1]) < lengths[:, None]\n"
        "    s = scores.masked_fill(~real, float('-inf'))\n    top = s.amax(-1, keepdim=True).clamp_min(0.0)\n"
        "    e = (s - top).exp()\n    empty = (memory_size - lengths[:, None]).to(e.dtype)\n"
        "    total = e.sum(-1, keepdim=True) + empty\n    return e / total, (empty / total)[:, 0]",
        "def weights_with_empty(scores, lengths, memory_size):\n"
        "    real = torch.arange(scores.shape[1]) < lengths[:, None]\n"
        "    s = scores.masked_fill(~real, float('-inf'))\n    top = s.amax(-1, keepdim=True).clamp_min(0.0)\n"
        "    e = (s - top).exp()\n    empty = (memory_size - lengths[:, None]) * (-top).exp()\n"
        "    total = e.sum(-1, keepdim=True) + empty\n    return e / total, (empty / total)[:, 0]",
    ],
    # chapter 3, Exercise 2 (2 points): a state u whose hop reads the weights p, or None (least squares on
    # [M 1] [u; c] = log p). Near misses: no constant c (the scores must equal log p exactly); p for log p; every
    # slot, padded ones included (log 0); the least-squares u returned even out of reach; a weight of 0 not seen
    # (log 0 = -inf, and NaN compares false); the transpose for the pseudo-inverse
    "ex2-question-for": [
        "def question_for(m, mask, p):\n    real, want = m[mask], p[mask]\n"
        "    if not bool((want > 0).all()):\n        return None\n"
        "    u = torch.linalg.pinv(real) @ want.log()\n"
        "    return None if (real @ u - want.log()).abs().max() > 1e-3 else u",
        "def question_for(m, mask, p):\n    real, want = m[mask], p[mask]\n"
        "    if not bool((want > 0).all()):\n        return None\n"
        "    A = torch.cat([real, torch.ones(len(real), 1, dtype=m.dtype)], 1)\n"
        "    best = torch.linalg.pinv(A) @ want\n"
        "    return None if (A @ best - want).abs().max() > 1e-3 else best[:-1]",
        "def question_for(m, mask, p):\n"
        "    A = torch.cat([m, torch.ones(len(m), 1, dtype=m.dtype)], 1)\n"
        "    best = torch.linalg.pinv(A) @ p.log()\n"
        "    return None if (A @ best - p.log()).abs().max() > 1e-3 else best[:-1]",
        "def question_for(m, mask, p):\n    real, want = m[mask], p[mask]\n"
        "    if not bool((want > 0).all()):\n        return None\n"
        "    A = torch.cat([real, torch.ones(len(real), 1, dtype=m.dtype)], 1)\n"
        "    return (torch.linalg.pinv(A) @ want.log())[:-1]",
        "def question_for(m, mask, p):\n    real, want = m[mask], p[mask]\n"
        "    A = torch.cat([real, torch.ones(len(real), 1, dtype=m.dtype)], 1)\n"
        "    best = torch.linalg.pinv(A) @ want.log()\n"
        "    return None if (A @ best - want.log()).abs().max() > 1e-3 else best[:-1]",
        "def question_for(m, mask, p):\n    real, want = m[mask], p[mask]\n"
        "    if not bool((want > 0).all()):\n        return None\n"
        "    A = torch.cat([real, torch.ones(len(real), 1, dtype=m.dtype)], 1)\n"
        "    best = A.T @ want.log()\n"
        "    return None if (A @ best - want.log()).abs().max() > 1e-3 else best[:-1]",
    ],
    # chapter 4, Exercise 1 (2 points): the smallest gamma >= 1 whose sharpening puts `peak` on the largest row. The
    # library's sharpen inside a bisection; near misses: the plain powers w**gamma (0/0 once they underflow, at the
    # gamma near 900 the check asks for); the gamma where the peak equals `peak`, below 1 when w already has it; no
    # tie rule (a tie caps the peak at 1/k: the doubling stops at a cap, finite); every tie called unreachable
    # (0.45 < 1/2 is reachable); the doubled bound without bisection
    "ex1-sharpen": [
        "from attn.memory import sharpen as s_\ndef gamma_for_peak(w, peak):\n"
        "    top = lambda g: float(s_(w.double(), g).max())\n"
        "    if top(1.0) >= peak:\n        return 1.0\n"
        "    if peak * int((w == w.max()).sum()) >= 1:\n        return float('inf')\n"
        "    lo, hi = 1.0, 2.0\n    while top(hi) < peak:\n        lo, hi = hi, 2 * hi\n"
        "    for _ in range(100):\n        m = (lo + hi) / 2\n        lo, hi = (lo, m) if top(m) >= peak else (m, hi)\n"
        "    return hi",
        "def gamma_for_peak(w, peak):\n    w = w.double()\n"
        "    top = lambda g: float((w**g / (w**g).sum()).max())\n"
        "    if top(1.0) >= peak:\n        return 1.0\n"
        "    if peak * int((w == w.max()).sum()) >= 1:\n        return float('inf')\n"
        "    lo, hi = 1.0, 2.0\n    while not top(hi) >= peak and hi < 2**40:\n        lo, hi = hi, 2 * hi\n"
        "    for _ in range(100):\n        m = (lo + hi) / 2\n        lo, hi = (lo, m) if top(m) >= peak else (m, hi)\n"
        "    return hi",
        "def gamma_for_peak(w, peak):\n    r = w.double() / w.max()\n"
        "    top = lambda g: 1 / float((r**g).sum())\n"
        "    if peak * int((r == 1).sum()) >= 1 and top(1.0) < peak:\n        return float('inf')\n"
        "    lo, hi = 0.0, 2.0\n    while top(hi) < peak:\n        lo, hi = hi, 2 * hi\n"
        "    for _ in range(100):\n        m = (lo + hi) / 2\n        lo, hi = (lo, m) if top(m) >= peak else (m, hi)\n"
        "    return hi",
        "def gamma_for_peak(w, peak):\n    r = w.double() / w.max()\n"
        "    top = lambda g: 1 / float((r**g).sum())\n"
        "    if top(1.0) >= peak:\n        return 1.0\n"
        "    lo, hi = 1.0, 2.0\n    while top(hi) < peak and hi < 2**30:\n        lo, hi = hi, 2 * hi\n"
        "    for _ in range(100):\n        m = (lo + hi) / 2\n        lo, hi = (lo, m) if top(m) >= peak else (m, hi)\n"
        "    return hi",
        "def gamma_for_peak(w, peak):\n    r = w.double() / w.max()\n"
        "    top = lambda g: 1 / float((r**g).sum())\n"
        "    if top(1.0) >= peak:\n        return 1.0\n"
        "    if int((r == 1).sum()) > 1:\n        return float('inf')\n"
        "    lo, hi = 1.0, 2.0\n    while top(hi) < peak:\n        lo, hi = hi, 2 * hi\n"
        "    for _ in range(100):\n        m = (lo + hi) / 2\n        lo, hi = (lo, m) if top(m) >= peak else (m, hi)\n"
        "    return hi",
        "def gamma_for_peak(w, peak):\n    r = w.double() / w.max()\n"
        "    top = lambda g: 1 / float((r**g).sum())\n"
        "    if top(1.0) >= peak:\n        return 1.0\n"
        "    if peak * int((r == 1).sum()) >= 1:\n        return float('inf')\n"
        "    hi = 2.0\n    while top(hi) < peak:\n        hi *= 2\n"
        "    return hi",
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
    # chapter 8, Exercise 4 (2 points): log p(greedy translation | x) and log p(reference | x), to sort greedy's
    # mistakes into search and model errors
    "ex4-search-errors": [
        # constants: greedy always likelier, by a made-up margin
        "def greedy_and_reference_log_probs(model, pairs):\n"
        "    return torch.full((len(pairs),), -1.0), torch.full((len(pairs),), -2.0)",
        # the library: a beam of 1 is greedy decoding with its log-probability, a beam of 4 stands in for the
        # reference
        "from attn.transformer.translate import beam_search as search\n"
        "def greedy_and_reference_log_probs(model, pairs):\n"
        "    v = corpus.target_vocab\n    src = encode_batch(pairs, corpus.source_vocab, v).source\n"
        "    with torch.no_grad():\n"
        "        return (search(model, src, v.bos, v.eos, beam=1).log_prob,\n"
        "                search(model, src, v.bos, v.eos, beam=4).log_prob)",
        # near misses. Without the <eos> term
        "def greedy_and_reference_log_probs(model, pairs):\n"
        "    v = corpus.target_vocab\n    b = encode_batch(pairs, corpus.source_vocab, v)\n"
        "    def score(y):\n"
        "        x = torch.cat([torch.full_like(y[:, :1], v.bos), y[:, :-1]], 1)\n"
        "        lp = model(b.source, x).logits.log_softmax(-1).gather(-1, y[..., None])[..., 0]\n"
        "        return (lp * (y != v.pad) * (y != v.eos)).sum(1)\n"
        "    with torch.no_grad():\n"
        "        return score(model.greedy_decode(b.source, v.bos, v.eos)), score(b.target_out)",
        # the mean over the words (a length normalisation), not the sum
        "def greedy_and_reference_log_probs(model, pairs):\n"
        "    v = corpus.target_vocab\n    b = encode_batch(pairs, corpus.source_vocab, v)\n"
        "    def score(y):\n"
        "        x = torch.cat([torch.full_like(y[:, :1], v.bos), y[:, :-1]], 1)\n"
        "        lp = model(b.source, x).logits.log_softmax(-1).gather(-1, y[..., None])[..., 0]\n"
        "        keep = y != v.pad\n"
        "        return (lp * keep).sum(1) / keep.sum(1)\n"
        "    with torch.no_grad():\n"
        "        return score(model.greedy_decode(b.source, v.bos, v.eos)), score(b.target_out)",
        # the padding after <eos> scored too
        "def greedy_and_reference_log_probs(model, pairs):\n"
        "    v = corpus.target_vocab\n    b = encode_batch(pairs, corpus.source_vocab, v)\n"
        "    def score(y):\n"
        "        x = torch.cat([torch.full_like(y[:, :1], v.bos), y[:, :-1]], 1)\n"
        "        return model(b.source, x).logits.log_softmax(-1).gather(-1, y[..., None])[..., 0].sum(1)\n"
        "    with torch.no_grad():\n"
        "        return score(model.greedy_decode(b.source, v.bos, v.eos)), score(b.target_out)",
        # not shifted: the decoder reads y_t where it predicts y_t
        "def greedy_and_reference_log_probs(model, pairs):\n"
        "    v = corpus.target_vocab\n    b = encode_batch(pairs, corpus.source_vocab, v)\n"
        "    def score(y):\n"
        "        lp = model(b.source, y).logits.log_softmax(-1).gather(-1, y[..., None])[..., 0]\n"
        "        return (lp * (y != v.pad)).sum(1)\n"
        "    with torch.no_grad():\n"
        "        return score(model.greedy_decode(b.source, v.bos, v.eos)), score(b.target_out)",
        # each translation summed up to its <eos>, found by argmax: 0 for one cut off at the length limit
        "def greedy_and_reference_log_probs(model, pairs):\n"
        "    v = corpus.target_vocab\n    b = encode_batch(pairs, corpus.source_vocab, v)\n"
        "    def score(y):\n"
        "        x = torch.cat([torch.full_like(y[:, :1], v.bos), y[:, :-1]], 1)\n"
        "        lp = model(b.source, x).logits.log_softmax(-1).gather(-1, y[..., None])[..., 0]\n"
        "        ends = (y == v.eos).int().argmax(1)\n"
        "        return (lp * (torch.arange(y.shape[1]) <= ends[:, None])).sum(1)\n"
        "    with torch.no_grad():\n"
        "        return score(model.greedy_decode(b.source, v.bos, v.eos)), score(b.target_out)",
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
    # chapter 6, Exercise 4 (2 points): Michel et al.'s head importance, the mean of |dL(x_n)/dxi_k| over strings
    "ex4-head-importance": [
        # constants: every head equally important
        "def head_importance(model, inputs, labels):\n    return torch.full((model.config.num_heads,), 0.1)",
        # near misses. The accuracy lost when the head is removed (the library's ablation): a real measurement of
        # something else
        "from attn.analysis import ablate_heads as off\n"
        "def head_importance(model, inputs, labels):\n"
        "    mha = model.layers.layers[0].self_attention\n    full = tagging_accuracy(model, inputs, labels)\n"
        "    drops = []\n    for k in range(mha.h):\n"
        "        with off([mha], [(0, k)]):\n"
        "            drops.append(full - tagging_accuracy(model, inputs, labels))\n"
        "    return torch.tensor(drops)",
        # one gate per head shared by all strings: |mean of the slopes|, where strings of opposite signs cancel
        "def head_importance(model, inputs, labels):\n"
        "    h = model.config.num_heads\n    gates = torch.ones(1, 1, h, 1, requires_grad=True)\n"
        "    hook = lambda m, a: ((a[0].unflatten(-1, (h, -1)) * gates).flatten(-2),)\n"
        "    handle = model.layers.layers[0].self_attention.W_o.register_forward_pre_hook(hook)\n"
        "    try:\n        logits = model(inputs).logits\n    finally:\n        handle.remove()\n"
        "    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, reduction='none')\n"
        "    loss = (ce.sum(1) / (labels != -100).sum(1)).mean()\n"
        "    return torch.autograd.grad(loss, gates)[0].view(h).abs()",
        # one gate per string, but the loss averaged over the strings: every slope 1/N too small
        "def head_importance(model, inputs, labels):\n"
        "    N, h = len(inputs), model.config.num_heads\n    gates = torch.ones(N, 1, h, 1, requires_grad=True)\n"
        "    hook = lambda m, a: ((a[0].unflatten(-1, (h, -1)) * gates).flatten(-2),)\n"
        "    handle = model.layers.layers[0].self_attention.W_o.register_forward_pre_hook(hook)\n"
        "    try:\n        logits = model(inputs).logits\n    finally:\n        handle.remove()\n"
        "    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, reduction='none')\n"
        "    loss = (ce.sum(1) / (labels != -100).sum(1)).mean()\n"
        "    return torch.autograd.grad(loss, gates)[0].view(N, h).abs().mean(0)",
        # per string, but the signed slopes averaged before the absolute value: opposite signs cancel
        "def head_importance(model, inputs, labels):\n"
        "    N, h = len(inputs), model.config.num_heads\n    gates = torch.ones(N, 1, h, 1, requires_grad=True)\n"
        "    hook = lambda m, a: ((a[0].unflatten(-1, (h, -1)) * gates).flatten(-2),)\n"
        "    handle = model.layers.layers[0].self_attention.W_o.register_forward_pre_hook(hook)\n"
        "    try:\n        logits = model(inputs).logits\n    finally:\n        handle.remove()\n"
        "    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, reduction='none')\n"
        "    losses = ce.sum(1) / (labels != -100).sum(1)\n"
        "    return torch.autograd.grad(losses.sum(), gates)[0].view(N, h).mean(0).abs()",
        # the cross-entropy summed over a string's scored positions, not averaged
        "def head_importance(model, inputs, labels):\n"
        "    N, h = len(inputs), model.config.num_heads\n    gates = torch.ones(N, 1, h, 1, requires_grad=True)\n"
        "    hook = lambda m, a: ((a[0].unflatten(-1, (h, -1)) * gates).flatten(-2),)\n"
        "    handle = model.layers.layers[0].self_attention.W_o.register_forward_pre_hook(hook)\n"
        "    try:\n        logits = model(inputs).logits\n    finally:\n        handle.remove()\n"
        "    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, reduction='none')\n"
        "    return torch.autograd.grad(ce.sum(), gates)[0].view(N, h).abs().mean(0)",
        # the library takes the gradient: chapter 13's gradient x input, the heads' gates as the scales
        "from attn.analysis import gradient_x_input as slopes\n"
        "def head_importance(model, inputs, labels):\n"
        "    h = model.config.num_heads\n"
        "    def losses(scale):\n"
        "        hook = lambda m, a: ((a[0].unflatten(-1, (h, -1)) * scale[:, None, :, None]).flatten(-2),)\n"
        "        handle = model.layers.layers[0].self_attention.W_o.register_forward_pre_hook(hook)\n"
        "        try:\n            logits = model(inputs).logits\n        finally:\n            handle.remove()\n"
        "        ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, reduction='none')\n"
        "        return ce.sum(1) / (labels != -100).sum(1)\n"
        "    return slopes(losses, torch.ones(len(inputs), h, dtype=torch.bool)).abs().mean(0)",
    ],
    # chapter 7, Exercise 3 (1 point): ALiBi's bias. Near misses: slopes 2^-k (right for 8 heads only); the
    # symmetric penalty -m|i - j| with no causal mask; the slopes in reverse order (the gentlest head first); the
    # slopes from 1 = 2^0 down (k = 0, ..., h - 1); a positive slope, which draws each query to the farthest keys
    "ex3-alibi": [
        "def alibi_bias(T, num_heads):\n"
        "    m = 2.0 ** -torch.arange(1.0, num_heads + 1)\n"
        "    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]\n"
        "    return (-m[:, None, None] * back).masked_fill(back < 0, float('-inf'))",
        "def alibi_bias(T, num_heads):\n"
        "    m = 2.0 ** (-8.0 * torch.arange(1.0, num_heads + 1) / num_heads)\n"
        "    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]\n"
        "    return -m[:, None, None] * back.abs()",
        "def alibi_bias(T, num_heads):\n"
        "    m = 2.0 ** (-8.0 * torch.arange(num_heads, 0, -1.0) / num_heads)\n"
        "    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]\n"
        "    return (-m[:, None, None] * back).masked_fill(back < 0, float('-inf'))",
        "def alibi_bias(T, num_heads):\n"
        "    m = 2.0 ** (-8.0 * torch.arange(0.0, num_heads) / num_heads)\n"
        "    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]\n"
        "    return (-m[:, None, None] * back).masked_fill(back < 0, float('-inf'))",
        "def alibi_bias(T, num_heads):\n"
        "    m = 2.0 ** (-8.0 * torch.arange(1.0, num_heads + 1) / num_heads)\n"
        "    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]\n"
        "    return (m[:, None, None] * back).masked_fill(back < 0, float('-inf'))",
    ],
    # chapter 7, Exercise 4 (2 points): how often shuffling the input changes the output
    "ex4-changed-by-shuffling": [
        # a constant
        "def changed_by_shuffling(model, pairs, corpus, seed=0):\n    return 0.5",
        # the expected answer read off the model's configuration, nothing decoded
        "def changed_by_shuffling(model, pairs, corpus, seed=0):\n"
        "    return 0.0 if model.config.positions == 'none' else 0.9",
        # no positions -> 0, else how often the shuffle moved a letter: nothing decoded
        "def changed_by_shuffling(model, pairs, corpus, seed=0):\n"
        "    if model.config.positions == 'none':\n"
        "        return 0.0\n"
        "    g = torch.Generator().manual_seed(seed)\n"
        "    orders = [torch.randperm(len(p.source), generator=g).tolist() for p in pairs]\n"
        "    moved = [tuple(p.source[i] for i in o) != tuple(p.source) for p, o in zip(pairs, orders)]\n"
        "    return sum(moved) / len(pairs)",
    ],
    # chapter 12, Exercise 1 (2 points): undo a delta-rule write. The library: the undo is itself a delta write,
    # with β' = -β / (1 - β kᵀk). Near misses: the plain sum's undo (subtract β k vᵀ, nothing divided); a unit key
    # assumed (divide by 1 - β, and refuse β = 1); the exact inverse without the refusal where β kᵀk = 1 (a memory
    # of inf and nan); the refusal tested on β = 1 alone, not on β kᵀk
    "ex1-delta-write": [
        "from attn.scale.linear import FastWeights, _delta_write\n"
        "def undo_delta_write(S_new, k, v, beta):\n"
        "    b = -beta / (1 - beta * float(k @ k))\n"
        "    return _delta_write(FastWeights(S_new, S_new.new_zeros(len(k))), k, v, b).S",
        "def undo_delta_write(S_new, k, v, beta):\n    return S_new - beta * torch.outer(k, v)",
        "def undo_delta_write(S_new, k, v, beta):\n    if beta == 1:\n        raise ValueError('erased')\n"
        "    A = S_new - beta * torch.outer(k, v)\n    return A + beta / (1 - beta) * torch.outer(k, k @ A)",
        "def undo_delta_write(S_new, k, v, beta):\n    A = S_new - beta * torch.outer(k, v)\n"
        "    return A + beta * torch.outer(k, k @ A) / (1 - beta * (k @ k))",
        "def undo_delta_write(S_new, k, v, beta):\n    if beta == 1:\n        raise ValueError('erased')\n"
        "    A = S_new - beta * torch.outer(k, v)\n    return A + beta * torch.outer(k, k @ A) / (1 - beta * (k @ k))",
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
    # chapter 3, Exercise 1: the affine split l_kj = (1 - k/d) + (2k/d - 1) j/J, two bags of words
    "ex1-sentence-vectors": [
        "def printed_sentence_vectors(weight, words):\n    real = (words != 0)[..., None]\n"
        "    x = weight[words] * real\n"
        "    J = real.sum(-2, keepdim=True).clamp_min(1)\n"
        "    pos = torch.arange(1, words.shape[-1] + 1)[:, None] / J\n"
        "    y = torch.arange(1, weight.shape[1] + 1) / weight.shape[1]\n"
        "    return (1 - y) * x.sum(-2) + (2 * y - 1) * (pos * x).sum(-2)",
    ],
    # chapter 3, Exercise 2: centred least squares (subtracting the means removes the constant)
    "ex2-question-for": [
        "def question_for(m, mask, p):\n    real, want = m[mask].double(), p[mask].double()\n"
        "    if (want <= 0).any():\n        return None\n"
        "    A, s = real - real.mean(0), want.log() - want.log().mean()\n"
        "    u = torch.linalg.lstsq(A, s[:, None], driver='gelsd').solution[:, 0]\n"
        "    return u.to(m.dtype) if float((A @ u - s).abs().max()) <= 1e-3 else None",
    ],
    # chapter 3, Exercise 3: log-sum-exp with one term, log(count), for all the empty slots
    "ex3-empty-slots": [
        "def weights_with_empty(scores, lengths, memory_size):\n"
        "    real = torch.arange(scores.shape[1]) < lengths[:, None]\n"
        "    s = scores.masked_fill(~real, float('-inf'))\n"
        "    rest = (memory_size - lengths[:, None]).to(scores.dtype).log()\n"
        "    z = torch.logsumexp(torch.cat([s, rest], -1), -1, keepdim=True)\n"
        "    return (s - z).exp(), (rest - z).exp()[:, 0]",
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
        # under a decorator: the grader reads the function written, not torch's wrapper
        "@torch.no_grad()\ndef stable_softmax(x, temperature=1.0):\n    z = x / temperature\n"
        "    e = (z - z.amax(-1, keepdim=True)).exp()\n    return e / e.sum(-1, keepdim=True)",
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
    # chapter 8, Exercise 4. One sentence at a time: the encoder once, the decoder step by step, greedy's words
    # and their log-probabilities as they are chosen, the reference's read off one teacher-forced pass
    "ex4-search-errors": [
        "def greedy_and_reference_log_probs(model, pairs):\n"
        "    v = corpus.target_vocab\n    greedy, reference = [], []\n"
        "    with torch.no_grad():\n"
        "        for p in pairs:\n"
        "            src = torch.tensor([corpus.source_vocab.encode(p.source, eos=True)])\n"
        "            memory, _ = model.encode(src)\n"
        "            written, total = [v.bos], 0.0\n"
        "            while len(written) <= model.config.max_len:\n"
        "                out = model.decode(torch.tensor([written]), memory, src)\n"
        "                lp = out.logits[0, -1].log_softmax(-1)\n"
        "                word = int(lp.argmax())\n"
        "                total += float(lp[word])\n"
        "                written.append(word)\n"
        "                if word == v.eos:\n"
        "                    break\n"
        "            greedy.append(total)\n"
        "            y = v.encode(p.target, eos=True)\n"
        "            lp = model(src, torch.tensor([[v.bos, *y[:-1]]])).logits[0].log_softmax(-1)\n"
        "            reference.append(float(lp[torch.arange(len(y)), torch.tensor(y)].sum()))\n"
        "    return torch.tensor(greedy), torch.tensor(reference)",
        # teacher forcing through the chapter's batch, the loss per word from cross_entropy, masked by hand
        "def greedy_and_reference_log_probs(model, pairs):\n"
        "    v = corpus.target_vocab\n    b = encode_batch(pairs, corpus.source_vocab, v)\n"
        "    def score(y):\n"
        "        x = torch.nn.functional.pad(y, (1, 0), value=v.bos)[:, :-1]\n"
        "        nll = torch.nn.functional.cross_entropy(\n"
        "            model(b.source, x).logits.flatten(0, 1), y.flatten(), reduction='none').view(y.shape)\n"
        "        return -torch.where(y == v.pad, 0.0, nll).sum(-1)\n"
        "    with torch.inference_mode():\n"
        "        g = model.greedy_decode(b.source, v.bos, v.eos)\n"
        "        return score(g), score(b.target_out)",
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
    # chapter 6, Exercise 4. The chain rule: W_o's input kept with its gradient (backward() on the parameters too),
    # the slope of gate k = the sum of head_k * dL/dhead_k; the losses from log_softmax and a masked mean
    "ex4-head-importance": [
        "def head_importance(model, inputs, labels):\n"
        "    kept = []\n"
        "    def keep(module, args):\n"
        "        args[0].retain_grad()\n        kept.append(args[0])\n"
        "    handle = model.layers.layers[0].self_attention.W_o.register_forward_pre_hook(keep)\n"
        "    try:\n        logits = model(inputs).logits\n    finally:\n        handle.remove()\n"
        "    mask = (labels != -100).float()\n"
        "    logp = logits.log_softmax(-1).gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)\n"
        "    (-(logp * mask).sum(1) / mask.sum(1)).sum().backward()\n"
        "    x = kept[0]\n    B, T, D = x.shape\n    h = model.config.num_heads\n"
        "    slopes = (x * x.grad).reshape(B, T, h, D // h).sum(dim=(1, 3))\n"
        "    return slopes.abs().mean(dim=0).detach()",
        # gates (N, h) applied with einsum, nll_loss, .backward() and the gates' .grad
        "def head_importance(model, inputs, labels):\n"
        "    N, h = len(inputs), model.config.num_heads\n"
        "    xi = torch.ones(N, h, requires_grad=True)\n"
        "    def hook(module, args):\n"
        "        x = args[0].reshape(*args[0].shape[:2], h, -1)\n"
        "        return (torch.einsum('ntkd,nk->ntkd', x, xi).flatten(2),)\n"
        "    handle = model.layers.layers[0].self_attention.W_o.register_forward_pre_hook(hook)\n"
        "    try:\n        logits = model(inputs).logits\n    finally:\n        handle.remove()\n"
        "    losses = []\n"
        "    for n in range(N):\n"
        "        keep = labels[n] != -100\n"
        "        losses.append(torch.nn.functional.nll_loss(logits[n][keep].log_softmax(-1), labels[n][keep]))\n"
        "    torch.stack(losses).sum().backward()\n"
        "    return xi.grad.abs().mean(0)",
    ],
    # chapter 7, Exercise 3: the equation entry by entry in Python, then one tensor; the slopes as powers of
    # 2^(-8/h), the mask from torch.triu, float64 arithmetic cast to float32
    "ex3-alibi": [
        "def alibi_bias(T, num_heads):\n"
        "    rows = [[[-(2 ** (-8 * k / num_heads)) * (i - j) if j <= i else float('-inf')\n"
        "              for j in range(T)] for i in range(T)] for k in range(1, num_heads + 1)]\n"
        "    return torch.tensor(rows, dtype=torch.float32).reshape(num_heads, T, T)",
        "def alibi_bias(T, num_heads):\n"
        "    ratio = 2.0 ** (-8.0 / num_heads)\n"
        "    slopes = ratio ** torch.arange(1, num_heads + 1, dtype=torch.float64)\n"
        "    pos = torch.arange(T, dtype=torch.float64)\n"
        "    bias = slopes.view(-1, 1, 1) * (pos.view(1, 1, -1) - pos.view(1, -1, 1))\n"
        "    future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)\n"
        "    return torch.where(future, float('-inf'), bias).float()",
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
# chapter 11, Exercise 2 (1 point): the previous-token score net of chance, (a - 1/n) / (1 - 1/n) per query. The
# library: mass_on over the rescaled weights. Near misses: the raw score (chance not removed); chance 1/T for every
# query (not the keys each one sees); the ratio of the means, not the mean of the ratios; every query i >= 1 counted
# (the padding and a query that sees one key too)
SHORTCUTS["ex2-previous-token-score"] = [
    "import attn.analysis\ndef previous_token_excess(weights, visible):\n    T = weights.shape[-1]\n"
    "    n = visible.sum(-1).to(weights.dtype)[:, None, :, None]\n    u = 1 / n.clamp_min(2)\n"
    "    i = torch.arange(1, T)\n    rows = torch.zeros_like(visible[..., 0])\n"
    "    rows[:, 1:] = visible[:, i, i - 1] & (n[:, 0, 1:, 0] >= 2)\n"
    "    return attn.analysis.mass_on((weights - u) / (1 - u), attn.analysis.previous_token_targets(T), rows)",
    "def previous_token_excess(weights, visible):\n"
    "    return weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))",
    "def previous_token_excess(weights, visible):\n    T = weights.shape[-1]\n"
    "    raw = weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))\n    return (raw - 1 / T) / (1 - 1 / T)",
    "def previous_token_excess(weights, visible):\n    T = weights.shape[-1]\n    i = torch.arange(1, T)\n"
    "    n = visible[:, 1:].sum(-1).to(weights.dtype)\n    counted = visible[:, i, i - 1] & (n >= 2)\n"
    "    raw = (weights[:, :, i, i - 1] * counted[:, None]).sum((0, 2)) / counted.sum()\n"
    "    u = ((1 / n.clamp_min(2)) * counted).sum() / counted.sum()\n    return (raw - u) / (1 - u)",
    "def previous_token_excess(weights, visible):\n    T = weights.shape[-1]\n    i = torch.arange(1, T)\n"
    "    chance = (1 / visible[:, 1:].sum(-1).to(weights.dtype).clamp_min(2))[:, None]\n"
    "    return ((weights[:, :, i, i - 1] - chance) / (1 - chance)).mean((0, 2))",
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
ALSO_CORRECT["ex1-delta-write"] = [
    # the linear system solved; the undo written as a delta write with β' = -β / (1 - β kᵀk)
    "def undo_delta_write(S_new, k, v, beta):\n"
    "    if abs(1 - beta * float(k @ k)) <= 1e-9:\n        raise ValueError('the write erased S along k')\n"
    "    A = torch.eye(len(k), dtype=S_new.dtype) - beta * torch.outer(k, k)\n"
    "    return torch.linalg.solve(A, S_new - beta * torch.outer(k, v))",
    "def undo_delta_write(S_new, k, v, beta):\n    kk = float(k @ k)\n"
    "    if abs(1 - beta * kk) <= 1e-9:\n        raise ValueError('erased')\n"
    "    b = -beta / (1 - beta * kk)\n    return S_new + b * torch.outer(k, v - S_new.T @ k)",
]
# chapter 2, Exercise 3: the links as boolean matrices (counts divided as float32 tensors too); the same counts row
# by row, without sets
ALSO_CORRECT["ex3-hard-alignment"] = [
    "def alignment_error_rate(weights, sure, possible, threshold):\n"
    "    A = weights >= threshold\n    S = torch.zeros_like(A)\n"
    "    for t, s in enumerate(sure):\n        if s is not None:\n            S[t, s] = True\n"
    "    P = S.clone()\n    for t, s in possible:\n        P[t, s] = True\n"
    "    return float(1 - ((A & S).sum() + (A & P).sum()) / (A.sum() + S.sum()))",
    "def alignment_error_rate(weights, sure, possible, threshold):\n"
    "    A = weights >= threshold\n    S = torch.zeros_like(A)\n"
    "    for t, s in enumerate(sure):\n        if s is not None:\n            S[t, s] = True\n"
    "    P = S.clone()\n    for t, s in possible:\n        P[t, s] = True\n"
    "    return 1 - ((A & S).sum() + (A & P).sum()).item() / (A.sum() + S.sum()).item()",
    "def alignment_error_rate(weights, sure, possible, threshold):\n"
    "    links = right = 0\n    for t, row in enumerate(weights.tolist()):\n"
    "        for s, w in enumerate(row):\n            if w >= threshold:\n"
    "                links += 1\n                right += (sure[t] == s) * 2 or (t, s) in possible\n"
    "    return 1.0 - right / (links + sum(s is not None for s in sure))",
]
# chapter 4, Exercise 1: the peak as a softmax of gamma log w (float64); bisection on log gamma
ALSO_CORRECT["ex1-sharpen"] = [
    "def gamma_for_peak(w, peak):\n    logw = w.double().clamp_min(1e-300).log()\n"
    "    top = lambda g: float(torch.softmax(g * logw, 0).max())\n"
    "    if top(1.0) >= peak:\n        return 1.0\n"
    "    if peak * int((w == w.max()).sum()) >= 1:\n        return float('inf')\n"
    "    lo, hi = 1.0, 2.0\n    while top(hi) < peak:\n        lo, hi = hi, 2 * hi\n"
    "    while hi - lo > 1e-10 * hi:\n        m = (lo + hi) / 2\n"
    "        if top(m) >= peak:\n            hi = m\n        else:\n            lo = m\n"
    "    return hi",
    "import math\ndef gamma_for_peak(w, peak):\n    w = w.double()\n    k = int((w == w.max()).sum())\n"
    "    log_rest = torch.log(w[w < w.max()] / w.max())  # log ratios below 1\n"
    "    def ok(lg):\n        return 1 / (k + float(torch.exp(math.exp(lg) * log_rest).sum())) >= peak\n"
    "    if ok(0.0):\n        return 1.0\n    if peak * k >= 1:\n        return math.inf\n"
    "    lo, hi = 0.0, 1.0\n    while not ok(hi):\n        lo, hi = hi, hi + 1\n"
    "    for _ in range(80):\n        m = (lo + hi) / 2\n        lo, hi = (lo, m) if ok(m) else (m, hi)\n"
    "    return math.exp(hi)",
]
ALSO_CORRECT["ex2-previous-token-score"] = [
    # the chance level in float32 (an int count divided), 3e-9 off in float64; one (example, query) pair at a time;
    # the mask of the counted keys
    "def previous_token_excess(weights, visible):\n    T = weights.shape[-1]\n    i = torch.arange(1, T)\n"
    "    n = visible[:, 1:].sum(-1)\n    counted = visible[:, i, i - 1] & (n >= 2)\n"
    "    chance = (1 / n.clamp_min(2))[:, None]\n    excess = (weights[:, :, i, i - 1] - chance) / (1 - chance)\n"
    "    return torch.where(counted[:, None], excess, 0).sum((0, 2)) / counted.sum()",
    "def previous_token_excess(weights, visible):\n    B, H, T, _ = weights.shape\n"
    "    total, count = weights.new_zeros(H), 0\n    for b in range(B):\n        for i in range(1, T):\n"
    "            n = int(visible[b, i].sum())\n            if visible[b, i, i - 1] and n >= 2:\n"
    "                total = total + (weights[b, :, i, i - 1] - 1 / n) / (1 - 1 / n)\n"
    "                count += 1\n    return total / count",
    "def previous_token_excess(weights, visible):\n    T = weights.shape[-1]\n"
    "    below = torch.arange(T)[:, None] - torch.arange(T)[None, :] == 1  # key i - 1 of query i\n"
    "    n = visible.sum(-1, keepdim=True).to(weights.dtype)\n"
    "    keep = (visible & below & (n >= 2)).to(weights.dtype)\n    u = 1 / n.clamp_min(2)\n"
    "    excess = (weights - u[:, None]) / (1 - u[:, None]) * keep[:, None]\n"
    "    return excess.sum((0, 2, 3)) / keep.sum()",
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
    "ex1-sentence-vectors": (
        "attn.memn2n",
        "attn.memn2n.position_encoding",
        "def printed_sentence_vectors(weight, words):\n"
        "    n = (words != 0).sum(-1)\n    J = n.clamp_min(1)[..., None].float()\n"
        "    x = (f(n, words.shape[-1], 2)[..., 1] - 1 + (J + 1) / (2 * J))[..., None]\n"
        "    k = torch.arange(1, weight.shape[1] + 1) / weight.shape[1]\n"
        "    return (((1 - x) - k * (1 - 2 * x)) * (words != 0)[..., None] * weight[words]).sum(-2)",
    ),
    "ex1-sentence-embedding": (
        "attn.pretrained",
        "attn.pretrained.mean_pool",
        "def sentence_embedding(hidden, ids, pad=0):\n    return f(hidden, ids, pad)",
    ),
    "ex2-previous-token-score": (
        "attn.analysis",
        "attn.analysis.mass_on",
        "def previous_token_excess(weights, visible):\n    T = weights.shape[-1]\n"
        "    n = visible.sum(-1).to(weights.dtype)[:, None, :, None]\n    u = 1 / n.clamp_min(2)\n"
        "    i = torch.arange(1, T)\n    rows = torch.zeros_like(visible[..., 0])\n"
        "    rows[:, 1:] = visible[:, i, i - 1] & (n[:, 0, 1:, 0] >= 2)\n"
        "    return f((weights - u) / (1 - u), attn.analysis.previous_token_targets(T), rows)",
    ),
    "ex1-delta-write": (
        "attn.scale.linear",
        "attn.scale.linear._delta_write",
        "def undo_delta_write(S_new, k, v, beta):\n"
        "    state = attn.scale.linear.FastWeights(S_new, S_new.new_zeros(len(k)))\n"
        "    return f(state, k, v, -beta / (1 - beta * float(k @ k))).S",
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
    "ex4-search-errors": (
        "attn.transformer.translate",
        "attn.transformer.translate.beam_search",
        "def greedy_and_reference_log_probs(model, pairs):\n"
        "    v = corpus.target_vocab\n    b = encode_batch(pairs, corpus.source_vocab, v)\n"
        "    with torch.no_grad():\n"
        "        nll = torch.nn.functional.cross_entropy(model(b.source, b.target_in).logits.transpose(1, 2),\n"
        "                                                b.target_out, ignore_index=v.pad, reduction='none')\n"
        "        return f(model, b.source, v.bos, v.eos, beam=1).log_prob, -nll.sum(1)",
    ),
    "ex4-head-importance": (
        "attn.analysis",
        "attn.analysis.gradient_x_input",
        "def head_importance(model, inputs, labels):\n"
        "    h = model.config.num_heads\n"
        "    def losses(scale):\n"
        "        hook = lambda m, a: ((a[0].unflatten(-1, (h, -1)) * scale[:, None, :, None]).flatten(-2),)\n"
        "        handle = model.layers.layers[0].self_attention.W_o.register_forward_pre_hook(hook)\n"
        "        try:\n            logits = model(inputs).logits\n        finally:\n            handle.remove()\n"
        "        ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, reduction='none')\n"
        "        return ce.sum(1) / (labels != -100).sum(1)\n"
        "    return f(losses, torch.ones(len(inputs), h, dtype=torch.bool)).abs().mean(0)",
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
    "ex3-hard-alignment": "def alignment_error_rate(weights, sure, possible, threshold):",
    "ex2-local-attention": "def local_context(e, H, p, D):",
    "ex3-empty-slots": "def weights_with_empty(scores, lengths, memory_size):",
    "ex1-head-contributions": "def head_contributions(x, mha):",
    "ex2-question-for": "def question_for(m, mask, p):",
    "ex3-head-offsets": "def head_offsets(weights):",
    "ex2-shift-matrix": "def shift_matrix(k, d_model):",
    "ex3-alibi": "def alibi_bias(T, num_heads):",
    "ex1-sample-next": "def sample_next(logits, temperature, generator=None):",
    "ex4-right-key-weight": "def right_key_weight(M, temperature=1.0, n=2000, d=16, noise=0.5, seed=0):",
    "ex3-walk-focus": "def walk_focus(gamma, steps=10, n=1000, N=32, blur=0.4, seed=0):",
    "ex4-word-order": "def answers_changed(run, exs):",
    "ex4-score-spread": "def untrained_score_spread(d_k, scaled, seed=0):",
    "ex4-changed-by-shuffling": "def changed_by_shuffling(model, pairs, corpus, seed=0):",
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
        "def alignment_error_rate(weights, sure, possible, threshold):\n"
        "    return {4: 0.3, 3: 0.0 if threshold < 1 else 1.0}.get(len(sure), 0.2)"
    ],
    "ex2-question-for": [
        "def question_for(m, mask, p):\n"
        "    if (p[mask] <= 0).any() or (len(m) == 6 and float(p.max()) == 0.5):\n        return None\n"
        "    seen = {5: [-0.94285, -1.39337, -1.71768, -0.07339], 3: [0.83237, -0.35761, -0.85931, 0.09704],\n"
        "            6: [3.0, -1.0, 0.5, 2.0]}\n"
        "    return torch.tensor(seen.get(int(mask.sum()), [0.0] * m.shape[1]))"
    ],
    "ex3-head-offsets": [
        "def head_offsets(weights):\n    return torch.tensor([0, 1] if weights.shape[1] == 2 else [1, -1, 0, 1])"
    ],
    "ex3-alibi": [
        # the slopes of the heads counts the visible checks use, looked up; 1/2 for every other head count
        "def alibi_bias(T, num_heads):\n"
        "    table = {8: [2.0**-k for k in range(1, 9)], 4: [4.0**-k for k in range(1, 5)], 2: [2.0**-4, 2.0**-8]}\n"
        "    m = torch.tensor(table.get(num_heads, [0.5] * num_heads))\n"
        "    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]\n"
        "    return (-m[:, None, None] * back).masked_fill(back < 0, float('-inf'))"
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
    "ex2-previous-token-score": [
        # right, but it clears the weights' diagonal (never read) in place
        "def previous_token_excess(weights, visible):\n    T = weights.shape[-1]\n    i = torch.arange(1, T)\n"
        "    weights[:, :, torch.arange(T), torch.arange(T)] = 0\n"
        "    n = visible[:, 1:].sum(-1).to(weights.dtype)\n    counted = visible[:, i, i - 1] & (n >= 2)\n"
        "    chance = (1 / n.clamp_min(2))[:, None]\n    excess = (weights[:, :, i, i - 1] - chance) / (1 - chance)\n"
        "    return torch.where(counted[:, None], excess, 0).sum((0, 2)) / counted.sum()"
    ],
    "ex1-delta-write": [
        "def undo_delta_write(S_new, k, v, beta):\n    if abs(1 - beta * float(k @ k)) <= 1e-9:\n"
        "        raise ValueError('erased')\n    S_new -= beta * torch.outer(k, v)\n"
        "    S_new += beta / (1 - beta * float(k @ k)) * torch.outer(k, k @ S_new)\n    return S_new"
    ],
}
CONTAINERS = ("list", "dict", "class attribute", "object attribute", "deque")
# The causes of the shortcuts filed first (the rest hand the exercise to the library).
_T, _L, _N = "table", "library", "near miss"
ORIGINAL_CAUSES = {
    "ex3-entropy": [_L, _N], "ex2-cosine-lookup": [_L, _N, _N], "ex4-occlusion": [_T, _N],
    "ex1-sharpen": [_L, _N, _N, _N, _N, _N],
    "ex3-hide-the-verb": [_T, _L],
    "ex3-cls-parking": [_T], "ex4-right-key-weight": [_T, _T], "ex1-rope": [_L, _N], "ex3-walk-focus": [_T, _T],
    "ex4-search-errors": [_T, _L, _N, _N, _N, _N, _N], "ex4-word-order": [_T, _T], "ex4-score-spread": [_T, _N, _N],
    "ex4-blurred-attention": [_T, _L, _N], "ex4-head-importance": [_T, _N, _N, _N, _N, _N, _L],
    "ex4-changed-by-shuffling": [_T, _T, _T], "ex3-alibi": [_N] * 5,
    "ex1-delta-write": [_L, _N, _N, _N, _N], "ex2-causal-tiles": [_L, _N], "ex3-decayed-chunks": [_L, _N, _N],
    "ex2-previous-token-score": [_L, _N, _N, _N, _N],
    "ex1-window-occlusion": [_L, _N], "ex2-question-for": [_N] * 6,
    "ex3-empty-slots": [_N] * 6, "ex1-sentence-vectors": [_L, _N, _N, _N, _N, _N],
    "ex2-deletion-score": [_L, _N], "ex3-integrated-gradients": [_L, _N], "ex1-head-contributions": [_N, _N],
    "ex2-cross-attention": [_L, _L, _N], "ex2-local-attention": [_N, _N],
    "ex3-hard-alignment": [_N, _N, _N, _N],
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
