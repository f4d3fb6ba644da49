// BERT's uncased WordPiece tokenizer, in the browser: the ids of attn.pretrained.encode (the `tokenizers` library
// with all-MiniLM-L6-v2's tokenizer.json), for chapter 11's live view (live.js). A classic script: it defines
// window.attnWordPiece = {vocabulary(text), encode(vocab, text, maxTokens)}; loading it twice is harmless.
//
// The steps are those of tokenizers' BertNormalizer, BertPreTokenizer and WordPiece model:
//   1. special tokens typed in the text ([CLS], [SEP], [PAD], [UNK], [MASK], exactly so) are kept whole;
//   2. clean: control, format and private-use characters, U+0000 and U+FFFD are dropped, whitespace becomes " ";
//   3. every CJK ideograph gets a space on each side;
//   4. NFD, then non-spacing marks (accents) are dropped; then each character is lower-cased on its own;
//   5. words are split at spaces, and every punctuation character becomes a word of its own;
//   6. each word becomes its longest vocabulary prefix, then "##"-pieces, longest first; a word with a piece
//      missing from the vocabulary, or longer than 100 characters, is [UNK];
//   7. [CLS] pieces [SEP], the pieces cut to maxTokens - 2.
// The character classes are tables read off the Python library (book/wordpiece_tables.py), not the browser's
// Unicode data, which is newer: the two must agree character for character.
(function (global) {
"use strict";
if (global.attnWordPiece) { return; }
// BEGIN TABLES (book/wordpiece_tables.py)
var TABLES = {
  drop: "0,8,2,1,1,h,2n,w,d,0,11u,5,m,0,5c,0,1d,0,3cu,0,1ks,4,q,4,1d,4,1,9,11u8,4xr,16n,0,6x,2,1,0,3b3,0,xya,3,43z,7,h406,0,u,2n,1egw,1ekd,2,1ekd",
  space: "9,1,2,0,i,0,3j,0,4bj,0,1vj,a,t,1,5,0,1b,0,334,0",
  mark: "lc,33,7n,4,7d,18,1,0,1,1,1,1,1,0,20,a,1c,k,g,0,2t,6,2,5,2,1,1,3,z,0,u,q,2j,a,1m,8,y,3,1,8,1,2,1,4,17,2,3r,v,1j,0,1,0,4,7,4,0,3,6,a,1,t,0,1m,0,4,3,8,0,k,1,t,1,1l,0,4,1,4,1,2,2,3,0,u,1,3,0,b,1,1l,0,4,4,1,1,4,0,k,1,t,0,1m,0,2,0,1,3,8,0,8,0,b,1,u,0,1p,0,c,0,1e,0,1p,2,5,2,1,3,7,1,b,1,t,0,1m,0,2,0,6,0,5,1,k,1,t,0,1r,3,8,0,k,1,2u,0,7,2,1,0,2i,0,2,6,c,7,2q,0,2,5,1,1,b,5,22,1,r,0,1,0,1,0,1j,d,1,4,1,1,5,a,1,z,9,0,2u,3,1,5,1,1,2,1,p,1,4,2,g,3,d,0,2,1,6,0,f,0,jj,2,qa,2,t,2,t,1,u,1,1s,1,1,6,8,0,2,a,9,0,19,2,4b,0,3a,2,4,1,9,0,6,2,63,1,2,0,1m,0,1,6,1,0,1,0,2,7,6,9,2,0,1c,d,1u,3,1c,0,1,4,1,0,5,0,14,8,c,1,w,3,2,1,1,2,1k,0,1,1,3,0,1,2,1m,7,2,1,48,2,1,c,1,6,4,0,6,0,3,1,5i,1h,6,3,k0,c,4,0,3,b,2da,2,3x,0,2o,v,fe,3,2z,1,n9w,0,4,9,w,1,28,1,7k,0,3,0,4,0,p,1,4d,0,r,h,1g,7,p,a,1a,2,1c,0,2,3,2,0,14,0,1v,5,2,1,2,1,c,0,8,0,1b,0,1f,0,1,2,2,1,5,1,1,0,16,1,8,0,6m,0,2,0,4,0,fn4,0,kh,f,g,f,r1,0,6a,0,45,4,1ae,2,1,1,5,3,14,2,4,0,4l,1,10a,0,1i,e,1k,2,1d,3,2,1,1x,2,10,4,1,7,1q,0,c,1,1g,8,b,2,2q,2,2,0,1,1,4n,0,3,7,l,1,1m,0,3,0,11,6,3,4,8u,5,1,0,4,1,1,1,6m,3,6,1,1,1,r,1,2d,7,2,0,1,1,2y,0,1,0,2,5,1,0,2t,2,2,3,1,4,gjo,4,1n,6,uw,3,f7u,1,43s,2,h,7,2,6,u,3,44,2,1iz,1i,4,1d,8,0,e,0,m,4,1,e,2sg,6,gzl5,6n",
  punct: "x,e,a,6,q,5,q,3,y,0,5,0,3,0,a,1,3,0,3,0,ji,0,8,0,cy,5,15,1,1f,0,1,0,2,0,2,0,18,1,k,1,1,1,d,0,2,1,22,3,2u,0,17,d,6h,2,1i,e,v,0,79,1,a,0,an,0,lf,0,2i,0,a,1,4o,e,1,0,11,3,1z,0,22,4,4,1,33,5,4r,0,h0,8,47,0,h8,1,18,1,26,2,1z,1,4d,2,1,2,11,a,8p,1,60,1,3k,6,1,5,4s,6,4b,3,1n,4,1q,1,1s,7,b,0,n0,n,8,j,1,c,1,b,u,1,e,1,hl,3,t,1,u5,d,27,1,v,9,b7,l,1r,3,w,1,l7,3,1,1,34,0,3z,1a,1,i,ce,2,4,9,2,b,g,0,c,0,2q,0,2i,0,mwy,1,7h,2,2r,0,a,0,37,5,ak,3,2e,1,14,2,1,0,1d,1,1b,0,2p,c,g,1,3g,3,3i,1,g,1,6x,0,g2a,1,5s,9,m,y,1,d,1,0,4,0,1,1,45,2,1,5,1,3,a,1,3,1,q,2,1,0,r,0,1,0,1,6,be,2,ik,0,1c,0,bi,0,kn,0,5j,0,v,0,7k,8,12,0,34,6,1u,6,2h,3,x6,6,31,1,1,3,3i,3,1c,1,27,4,3,0,d,0,1,2,2g,5,2z,0,f0,0,6y,m,2x,2,6w,2,2lt,4,dtl,1,3p,0,1t,4,8,0,g2i,0,5wn,4",
  cjk: "a9s,533,1s,g73,hkw,e7,1fk0,wyn,w,3dr,74,49b,85s,f3",
};
// END TABLES
var SPECIAL = /\[(?:PAD|UNK|CLS|SEP|MASK)\]/g;
var MAX_WORD = 100;  // characters (code points); a longer word is [UNK]

function decode(text) {  // "gap,length-1,gap,length-1,..." in base 36 -> sorted inclusive ranges [start, end]
  var numbers = text.split(",").map(function (n) { return parseInt(n, 36); }), starts = [], ends = [], end = -1;
  for (var k = 0; k < numbers.length; k += 2) {
    starts.push(end + 1 + numbers[k]); end = starts[starts.length - 1] + numbers[k + 1]; ends.push(end);
  }
  return function (cp) {  // is the code point in one of the ranges? (binary search)
    var lo = 0, hi = starts.length - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (cp < starts[mid]) { hi = mid - 1; } else if (cp > ends[mid]) { lo = mid + 1; } else { return true; }
    }
    return false;
  };
}
var is = {};
Object.keys(TABLES).forEach(function (name) { is[name] = decode(TABLES[name]); });

function isSurrogate(cp) { return cp >= 0xd800 && cp <= 0xdfff; }  // a lone half of a pair: not a character

function normalise(text) {  // steps 2 to 4: the normalised text
  var out = [];
  Array.from(text).forEach(function (c) {
    var cp = c.codePointAt(0);
    if (is.drop(cp) || isSurrogate(cp)) { return; }
    if (is.space(cp)) { out.push(" "); } else if (is.cjk(cp)) { out.push(" ", c, " "); } else { out.push(c); }
  });
  return Array.from(out.join("").normalize("NFD")).filter(function (c) {
    return !is.mark(c.codePointAt(0)); }).map(function (c) { return c.toLowerCase(); }).join("");
}

function words(text) {  // step 5: the words of normalised text
  var out = [];
  text.split(" ").forEach(function (chunk) {
    var word = "";
    Array.from(chunk).forEach(function (c) {
      if (is.punct(c.codePointAt(0))) {
        if (word) { out.push(word); word = ""; }
        out.push(c);
      } else { word += c; }
    });
    if (word) { out.push(word); }
  });
  return out;
}

function pieces(vocab, word) {  // step 6: the word's pieces (strings)
  var chars = Array.from(word);
  if (chars.length > MAX_WORD) { return ["[UNK]"]; }
  var out = [], start = 0;
  while (start < chars.length) {
    var end = chars.length, found = null;
    while (start < end) {
      var piece = (start > 0 ? "##" : "") + chars.slice(start, end).join("");
      if (vocab.has(piece)) { found = piece; break; }
      end -= 1;
    }
    if (found === null) { return ["[UNK]"]; }
    out.push(found);
    start = end;
  }
  return out;
}

function vocabulary(text) {  // vocab.txt (one token a line, id = line number) -> Map token -> id
  var lines = text.split("\n"), vocab = new Map();
  if (lines.length && lines[lines.length - 1] === "") { lines.pop(); }  // the file's final newline
  lines.forEach(function (token, id) {
    token = token.replace(/\r$/, "");
    if (!vocab.has(token)) { vocab.set(token, id); }
  });
  ["[CLS]", "[SEP]", "[UNK]"].forEach(function (t) {
    if (!vocab.has(t)) { throw new Error("the vocabulary has no " + t + " token"); } });
  return vocab;
}

// text -> {tokens, ids, truncated, total}: total counts the pieces with [CLS] and [SEP] before any cut.
function encode(vocab, text, maxTokens) {
  if (maxTokens === undefined) { maxTokens = 128; }
  var tokens = [], last = 0, match;
  SPECIAL.lastIndex = 0;
  function plain(segment) {
    words(normalise(segment)).forEach(function (w) { tokens.push.apply(tokens, pieces(vocab, w)); });
  }
  while ((match = SPECIAL.exec(text)) !== null) {
    plain(text.slice(last, match.index));
    tokens.push(match[0]);
    last = SPECIAL.lastIndex;
  }
  plain(text.slice(last));
  var total = tokens.length + 2, truncated = total > maxTokens;
  if (truncated) { tokens = tokens.slice(0, Math.max(0, maxTokens - 2)); }
  tokens = ["[CLS]"].concat(tokens, ["[SEP]"]);
  return {tokens: tokens, ids: tokens.map(function (t) { return vocab.get(t); }), truncated: truncated,
    total: total};
}

global.attnWordPiece = {vocabulary: vocabulary, encode: encode, normalise: normalise, words: words};
})(typeof window !== "undefined" ? window : globalThis);
