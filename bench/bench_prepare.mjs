// The anchors of bench_prepare.sh: Hugging Face `tokenizers` (the native Rust binding) with a
// tokenizer.json, and `tiktoken` cl100k_base, over the same JSON-lines files prepare reads. Prints
// one line per anchor: "<name> <MB/s> <bytes> <seconds>"; with --ids N also writes the first N
// documents' ids from `tokenizers` (no special tokens) as JSON to the given file.
// usage: node bench_prepare.mjs MODULES TOKENIZER_JSON CORPUS_DIR IDS_OUT N_IDS
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { createRequire } from "node:module";

const [modules, tokenizerJson, corpusDir, idsOut, nIds] = process.argv.slice(2);
const require = createRequire(path.join(modules, "x.js"));
const { Tokenizer } = require("tokenizers");
const { get_encoding } = require("tiktoken");

async function* documents() {
  for (const f of fs.readdirSync(corpusDir).filter((n) => n.endsWith(".jsonl")).sort()) {
    const rl = readline.createInterface({ input: fs.createReadStream(path.join(corpusDir, f)), crlfDelay: Infinity });
    for await (const line of rl) if (line.trim()) yield JSON.parse(line).text;
  }
}

// Documents are read in batches of about 16 MB (the reading is timed apart and left out).
async function run(name, encodeBatch) {
  let bytes = 0, seconds = 0, batch = [], batchBytes = 0;
  const flush = async () => {
    const t0 = process.hrtime.bigint();
    await encodeBatch(batch);
    seconds += Number(process.hrtime.bigint() - t0) / 1e9;
    batch = [];
    batchBytes = 0;
  };
  for await (const doc of documents()) {
    const n = Buffer.byteLength(doc, "utf8");
    bytes += n;
    batchBytes += n;
    batch.push(doc);
    if (batchBytes >= 16e6) await flush();
  }
  await flush();
  console.log(`${name} ${(bytes / 1e6 / seconds).toFixed(2)} ${bytes} ${seconds.toFixed(2)}`);
}

const hf = Tokenizer.fromFile(tokenizerJson);
const ids = [];
const want = Number(nIds);
await run("hf_tokenizers", async (docs) => {
  const enc = await hf.encodeBatch(docs, { addSpecialTokens: false });
  for (let i = 0; i < enc.length && ids.length < want; ++i) ids.push(Array.from(enc[i].getIds()));
});
fs.writeFileSync(idsOut, JSON.stringify(ids));
const tk = get_encoding("cl100k_base");
await run("tiktoken_cl100k", async (docs) => {
  for (const d of docs) tk.encode_ordinary(d);
});
tk.free();
