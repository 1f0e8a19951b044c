// llama.cpp through node-llama-cpp 3.22.1 (npm, installed by scripts/setup.sh
// into .deps/npm): greedy generation for the oracle test and llama-bench-like
// timing, CPU only, printed as JSON. The prebuilt CPU binary
// (@node-llama-cpp/linux-x64) is used as is: getLlama is told gpu false,
// build "never", skipDownload, so nothing is downloaded or compiled.
//
//   node bench/llamacpp/run.mjs greedy -m FILE --prompt TEXT [-n 32] [-t 2] [--logits]
//     {"prompt_tokens": [...], "tokens": [...], "prompt_logits": [...]?}
//     The prompt tokenized as llama.cpp does (BOS when the vocab asks, special
//     tokens parsed), evaluated in one batch, then N tokens by llama.cpp's
//     greedy sampler alone: temperature 0, and no top-k/top-p/min-p, no
//     repeat/presence/frequency/DRY penalty, no XTC, no token bias, no
//     grammar; EOS does not stop. --logits adds the prompt's last-position
//     logits (f32, n_vocab entries, by token id).
//   node bench/llamacpp/run.mjs bench -m FILE [-p 512] [-n 128] [-r 5] [-t 2]
//     The same records as `thermocline bench -o json`. Each evaluation goes
//     through node-llama-cpp's batching queue (an event-loop hop per call),
//     so bench/llamacpp_bench.cpp, which calls libllama directly, is the
//     runner bench/compare_llamacpp.sh uses; this one is a cross-check.
//
// Options: --npm-prefix DIR (default <repo>/.deps/npm, or $THERMOCLINE_NPM_PREFIX).
import {createRequire} from "node:module";
import {basename, dirname, resolve} from "node:path";
import {fileURLToPath, pathToFileURL} from "node:url";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

function usage(why) {
    process.stderr.write(`run.mjs: ${why}\n` +
        "usage: node bench/llamacpp/run.mjs greedy -m FILE --prompt TEXT [-n N] [-t T] [--logits]\n" +
        "       node bench/llamacpp/run.mjs bench -m FILE [-p N] [-n N] [-r R] [-t T]\n");
    process.exit(2);
}

function parseArgs(argv) {
    const args = {mode: argv[0], model: null, prompt: null, nPrompt: 512, nGen: null, reps: 5, threads: 2,
        logits: false, npmPrefix: process.env.THERMOCLINE_NPM_PREFIX || resolve(repoRoot, ".deps", "npm")};
    if (args.mode !== "greedy" && args.mode !== "bench") usage(`unknown mode ${args.mode}`);
    const intArg = (name, v, min) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < min) usage(`bad value for ${name}: ${v}`);
        return n;
    };
    for (let i = 1; i < argv.length; i++) {
        const k = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) usage(`${k} needs a value`);
            return argv[++i];
        };
        if (k === "-m" || k === "--model") args.model = next();
        else if (k === "--prompt") args.prompt = next();
        else if (k === "-p" || k === "--n-prompt") args.nPrompt = intArg(k, next(), 0);
        else if (k === "-n" || k === "--n-gen") args.nGen = intArg(k, next(), 0);
        else if (k === "-r" || k === "--repetitions") args.reps = intArg(k, next(), 1);
        else if (k === "-t" || k === "--threads") args.threads = intArg(k, next(), 1);
        else if (k === "--logits") args.logits = true;
        else if (k === "--npm-prefix") args.npmPrefix = resolve(next());
        else usage(`unknown option ${k}`);
    }
    if (args.model == null) usage("-m FILE is required");
    if (args.mode === "greedy" && args.prompt == null) usage("greedy needs --prompt TEXT");
    if (args.nGen == null) args.nGen = args.mode === "greedy" ? 32 : 128;
    return args;
}

// node-llama-cpp lives in .deps/npm, not beside this script: resolve it there.
async function importNodeLlamaCpp(npmPrefix) {
    const require = createRequire(resolve(npmPrefix, "package.json"));
    let entry;
    try {
        entry = require.resolve("node-llama-cpp");
    } catch {
        process.stderr.write(`run.mjs: node-llama-cpp is not installed under ${npmPrefix} (run scripts/setup.sh)\n`);
        process.exit(3);
    }
    return import(pathToFileURL(entry).href);
}

// The token count from the GGUF metadata (tokenizer.ggml.tokens).
function vocabularySize(model) {
    const n = model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length;
    if (!Number.isInteger(n) || n <= 0) throw new Error("the model file has no tokenizer.ggml.tokens");
    return n;
}

// Only llama.cpp's greedy sampler: temperature 0 selects it (AddonSampler
// then builds a chain of token bias, repeat penalty, DRY, XTC and greedy, and
// each of those is absent unless asked for); top-k/top-p/min-p are set to
// their off values as well so that no default sneaks in.
const greedyOptions = {temperature: 0, minP: 0, topK: 0, topP: 1};

async function runGreedy(args, llama, model) {
    const promptTokens = [
        ...(model.tokens.shouldPrependBosToken && model.tokens.bos != null ? [model.tokens.bos] : []),
        ...model.tokenize(args.prompt, true)
    ];
    if (promptTokens.length === 0) throw new Error("the prompt has no tokens");
    const context = await model.createContext({
        contextSize: promptTokens.length + args.nGen + 1,
        batchSize: Math.max(promptTokens.length, 1),
        sequences: 1,
        threads: args.threads,
        flashAttention: false
    });
    const sequence = context.getSequence();
    const tokens = [];
    const first = {generateNext: {token: true, options: greedyOptions, ...(args.logits ? {logits: true} : {})}};
    let input = promptTokens.map((t, i) => (i === promptTokens.length - 1 ? [t, first] : t));
    let promptLogits = null;
    while (tokens.length < args.nGen) {
        const out = await sequence.controlledEvaluate(input);
        const next = out[input.length - 1]?.next;
        if (next?.token == null) throw new Error("node-llama-cpp returned no token");
        if (promptLogits == null && next.logits != null) {
            promptLogits = new Array(vocabularySize(model)).fill(null);
            for (const [id, v] of next.logits) promptLogits[id] = v;
        }
        tokens.push(next.token);
        input = [[next.token, {generateNext: {token: true, options: greedyOptions}}]];
    }
    await context.dispose();
    const out = {prompt_tokens: promptTokens, tokens};
    if (args.logits) out.prompt_logits = promptLogits;
    process.stdout.write(JSON.stringify(out) + "\n");
}

function stats(values) {
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    const sd = values.length > 1
        ? Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / (values.length - 1))
        : 0;
    return {mean, sd};
}

// xorshift32, seeded: the same random tokens on every run.
function makeRng(seed) {
    let x = seed >>> 0 || 1;
    return () => {
        x ^= x << 13; x >>>= 0;
        x ^= x >>> 17;
        x ^= x << 5; x >>>= 0;
        return x;
    };
}

async function runBench(args, llama, model) {
    const nVocab = vocabularySize(model);
    const rng = makeRng(1);
    const randomToken = () => rng() % nVocab;
    const bos = model.tokens.shouldPrependBosToken ? model.tokens.bos : null;
    const records = [];
    const record = (test, seconds, n) => {
        const tps = seconds.map((s) => n / s);
        const {mean, sd} = stats(tps);
        records.push({model: basename(args.model), backend: "llama.cpp (node-llama-cpp 3.22.1, cpu)",
            threads: args.threads, test, avg_ts: mean, stddev_ts: sd, samples_ts: tps, samples_s: seconds});
    };
    // Logits for the last token only, as llama-bench's llama_batch_get_one.
    const lastWithLogits = (toks) => toks.map((t, i) => (i === toks.length - 1
        ? [t, {generateNext: {token: true, options: greedyOptions}}] : t));
    if (args.nPrompt > 0) {
        const context = await model.createContext({contextSize: args.nPrompt + 1, batchSize: args.nPrompt,
            sequences: 1, threads: args.threads, flashAttention: false});
        const sequence = context.getSequence();
        const once = async () => {
            await sequence.clearHistory();
            const toks = Array.from({length: args.nPrompt}, randomToken);
            if (bos != null) toks[0] = bos;
            const start = process.hrtime.bigint();
            await sequence.controlledEvaluate(lastWithLogits(toks));
            return Number(process.hrtime.bigint() - start) / 1e9;
        };
        await once();  // warm-up
        const seconds = [];
        for (let r = 0; r < args.reps; r++) seconds.push(await once());
        record(`pp${args.nPrompt}`, seconds, args.nPrompt);
        await context.dispose();
    }
    if (args.nGen > 0) {
        const context = await model.createContext({contextSize: args.nGen + 1, batchSize: 1, sequences: 1,
            threads: args.threads, flashAttention: false});
        const sequence = context.getSequence();
        const once = async (n) => {
            await sequence.clearHistory();
            let token = bos ?? randomToken();
            const start = process.hrtime.bigint();
            for (let i = 0; i < n; i++) {
                await sequence.controlledEvaluate(lastWithLogits([token]));
                token = randomToken();
            }
            return Number(process.hrtime.bigint() - start) / 1e9;
        };
        await once(1);  // warm-up, as llama-bench: one token
        const seconds = [];
        for (let r = 0; r < args.reps; r++) seconds.push(await once(args.nGen));
        record(`tg${args.nGen}`, seconds, args.nGen);
        await context.dispose();
    }
    process.stdout.write(JSON.stringify(records, null, 2) + "\n");
}

const args = parseArgs(process.argv.slice(2));
const {getLlama, LlamaLogLevel} = await importNodeLlamaCpp(args.npmPrefix);
const llama = await getLlama({
    gpu: false,               // the CPU build only
    build: "never",           // never compile llama.cpp; fail if the prebuilt binary is unusable
    skipDownload: true,       // never fetch llama.cpp sources
    usePrebuiltBinaries: true,
    progressLogs: false,
    logLevel: LlamaLogLevel.error,
    maxThreads: args.threads
});
if (llama.gpu !== false) throw new Error(`node-llama-cpp picked gpu ${llama.gpu}, expected the CPU build`);
const model = await llama.loadModel({modelPath: resolve(args.model), gpuLayers: 0});
try {
    if (args.mode === "greedy") await runGreedy(args, llama, model);
    else await runBench(args, llama, model);
} finally {
    await model.dispose();
    await llama.dispose();
}
