"""The reference for `bench_embed`: the same int8 model through Python onnxruntime, written the
way a Python user would: Hugging Face `tokenizers` (truncation at the model's 256 tokens, padding
to the longest text of each batch), batches in input order, mean pooling and L2 normalization
in numpy. Timed end to end like the Rust side: tokenize + inference + pooling, model load
excluded.

Reads a JSON job from argv[1]: {"model", "tokenizer", "texts", "threads", "batch", "max_tokens"}.
Prints {"chunks", "tokens", "seconds"} as JSON.
"""
import json
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def main():
    job = json.load(open(sys.argv[1]))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = job["threads"]
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(job["model"], opts, providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(job["tokenizer"])
    tok.enable_truncation(max_length=job["max_tokens"])
    tok.enable_padding()  # to the longest of each batch
    names = {i.name for i in session.get_inputs()}
    texts, batch = job["texts"], job["batch"]

    started = time.perf_counter()
    tokens = 0
    for i in range(0, len(texts), batch):
        enc = tok.encode_batch(texts[i : i + batch])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros_like(ids)
        out = session.run(None, feed)[0]
        m = mask[:, :, None].astype(np.float32)
        v = (out * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        tokens += int(mask.sum())
    seconds = time.perf_counter() - started
    print(json.dumps({"chunks": len(texts), "tokens": tokens, "seconds": seconds}))


if __name__ == "__main__":
    main()
