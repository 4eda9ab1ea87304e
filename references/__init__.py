"""Every public source the app cites, in one registry, and one citation style.

Pages, lessons, derivations and the CLI help cite with ``cite("yarn")`` (a short markdown link:
"[Peng et al. 2023](https://arxiv.org/abs/2309.00071)") or ``cite("yarn", "§3.2")``; the
References page lists the whole registry. A source a student cannot open is not cited.
"""

from __future__ import annotations

from typing import NamedTuple

from i18n import N_, _


class Reference(NamedTuple):
    key: str
    authors: str  # "Su, Lu, Pan, Murtadha, Wen, Liu"
    short: str  # how the text cites it: "Su et al. 2021"
    year: int
    title: str
    venue: str  # journal, conference, preprint server, blog, repository
    url: str
    arxiv: str = ""  # "2104.09864"
    note: str = ""  # N_()-marked: what the app takes from it
    date: str = ""  # ISO date for blog posts and threads


def _arxiv(number: str) -> str:
    return f"https://arxiv.org/abs/{number}"


_ALL = (
    # -- RoPE and absolute encodings -------------------------------------------------------------
    Reference("roformer", "Su, Lu, Pan, Murtadha, Wen, Liu", "Su et al. 2021", 2021,
              "RoFormer: Enhanced Transformer with Rotary Position Embedding", "arXiv; Neurocomputing 2024",
              _arxiv("2104.09864"), "2104.09864",
              N_("RoPE itself: the rotation, relative positions from absolute rotations, the long-range decay bound.")),
    Reference("vaswani", "Vaswani, Shazeer, Parmar, Uszkoreit, Jones, Gomez, Kaiser, Polosukhin",
              "Vaswani et al. 2017", 2017, "Attention Is All You Need", "NeurIPS 2017", _arxiv("1706.03762"),
              "1706.03762", N_("Sinusoidal position encodings and learned position embeddings.")),
    Reference("nope", "Haviv, Ram, Press, Izsak, Levy", "Haviv et al. 2022", 2022,
              "Transformer Language Models without Positional Encodings Still Learn Positional Information",
              "Findings of EMNLP 2022", _arxiv("2203.16634"), "2203.16634",
              N_("A causal transformer with no position encoding (NoPE) still infers positions from the mask.")),
    Reference("llama2", "Touvron, Martin, Stone, et al.", "Touvron et al. 2023", 2023,
              "Llama 2: Open Foundation and Fine-Tuned Chat Models", "arXiv", _arxiv("2307.09288"), "2307.09288",
              N_("Llama 2: RoPE with base 10,000 and head size 128, trained at 4,096 tokens.")),
    Reference("su_sinusoidal", "Su Jianlin", "Su 2021a", 2021,
              "Transformer升级之路：1、Sinusoidal位置编码追根溯源 (Tracing sinusoidal position encoding to its roots)",
              "Scientific Spaces (kexue.fm)", "https://kexue.fm/archives/8231", note=N_(
                  "Why sinusoidal encodings carry relative position, and their long-range decay."), date="2021-03-08"),
    Reference("su_rope", "Su Jianlin", "Su 2021b", 2021,
              "Transformer升级之路：2、博采众长的旋转式位置编码 (Rotary position embedding, drawing on the best)",
              "Scientific Spaces (kexue.fm)", "https://kexue.fm/archives/8265", note=N_(
                  "The derivation of RoPE from the relative-position requirement, and its efficient form."),
              date="2021-03-23"),
    Reference("llama_code", "Meta AI", "Meta's LLaMA code 2023", 2023, "llama/model.py: precompute_freqs_cis, "
              "apply_rotary_emb", "GitHub meta-llama/llama", "https://github.com/meta-llama/llama/blob/main/llama/model.py",
              note=N_("RoPE as complex multiplication, the code most readers meet first.")),
    Reference("transformers_rope", "Hugging Face", "transformers' modeling_rope_utils", 2025,
              "modeling_rope_utils.py: ROPE_INIT_FUNCTIONS", "GitHub huggingface/transformers",
              "https://github.com/huggingface/transformers/blob/main/src/transformers/modeling_rope_utils.py",
              note=N_("The reference implementation every frequency here is tested against.")),
    Reference("llama_conversion", "Hugging Face", "transformers' LLaMA conversion script", 2023,
              "convert_llama_weights_to_hf.py: permute", "GitHub huggingface/transformers",
              "https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama/"
              "convert_llama_weights_to_hf.py",
              note=N_("Reorders the rows of W_q and W_k so LLaMA's interleaved pairs work with rotate_half.")),
    Reference("floater", "Liu, Yu, Dhillon, Hsieh", "Liu et al. 2020", 2020,
              "Learning to Encode Position for Transformer with Continuous Dynamical Model", "ICML 2020",
              _arxiv("2003.09229"), "2003.09229", N_("FLOATER: positions from an ODE; sinusoidal is one solution.")),
    Reference("complex_order", "Wang, Zhao, Zhang, Li, Wang, Simonsen", "Wang et al. 2020", 2020,
              "Encoding word order in complex embeddings", "ICLR 2020", _arxiv("1912.12333"), "1912.12333",
              N_("Complex-order embeddings: each word a wave over positions.")),
    Reference("su_hierarchical", "Su Jianlin", "Su 2020", 2020,
              "层次分解位置编码，让BERT可以处理超长文本 (Hierarchically decomposed position encoding lets BERT handle "
              "very long texts)", "Scientific Spaces (kexue.fm)", "https://kexue.fm/archives/7947",
              note=N_("Extending n learned positions to n² as αuᵢ + (1 − α)uⱼ, the first n kept."), date="2020-12-04"),
    Reference("su_position_survey", "Su Jianlin", "Su 2021d", 2021,
              "让研究人员绞尽脑汁的Transformer位置编码 (The Transformer position encodings that rack researchers' "
              "brains)", "Scientific Spaces (kexue.fm)", "https://kexue.fm/archives/8130",
              note=N_("A survey of absolute, relative and other encodings: the four terms, multiplicative positions, "
                      "FLOATER's sinusoidal solution."), date="2021-02-03"),
    Reference("cnn_position", "Islam, Jia, Bruce", "Islam et al. 2020", 2020,
              "How Much Position Information Do Convolutional Neural Networks Encode?", "ICLR 2020",
              _arxiv("2001.08248"), "2001.08248", N_("CNNs read absolute position from zero padding.")),
    # -- relative encodings and biases -------------------------------------------------------------
    Reference("shaw", "Shaw, Uszkoreit, Vaswani", "Shaw et al. 2018", 2018,
              "Self-Attention with Relative Position Representations", "NAACL 2018", _arxiv("1803.02155"),
              "1803.02155", N_("Relative position vectors in the keys and values, clipped at a maximum distance.")),
    Reference("transformer_xl", "Dai, Yang, Yang, Carbonell, Le, Salakhutdinov", "Dai et al. 2019", 2019,
              "Transformer-XL: Attentive Language Models Beyond a Fixed-Length Context", "ACL 2019",
              _arxiv("1901.02860"), "1901.02860", N_("Relative sinusoidal Rᵢ₋ⱼ with trainable u and v.")),
    Reference("t5", "Raffel, Shazeer, Roberts, Lee, Narang, Matena, Zhou, Li, Liu", "Raffel et al. 2020", 2020,
              "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer", "JMLR 2020",
              _arxiv("1910.10683"), "1910.10683", N_("A learned scalar bias per log-spaced relative-distance bucket.")),
    Reference("deberta", "He, Liu, Gao, Chen", "He et al. 2021", 2021,
              "DeBERTa: Decoding-enhanced BERT with Disentangled Attention", "ICLR 2021", _arxiv("2006.03654"),
              "2006.03654", N_("Content-to-position and position-to-content terms, no position-to-position.")),
    Reference("tupe", "Ke, He, Liu", "Ke et al. 2021", 2021, "Rethinking Positional Encoding in Language Pre-training",
              "ICLR 2021", _arxiv("2006.15595"), "2006.15595", N_("TUPE: untied position and content attention.")),
    Reference("xlnet", "Yang, Dai, Yang, Carbonell, Salakhutdinov, Le", "Yang et al. 2019", 2019,
              "XLNet: Generalized Autoregressive Pretraining for Language Understanding", "NeurIPS 2019",
              _arxiv("1906.08237"), "1906.08237",
              N_("Pre-training with Transformer-XL's relative encoding, which is why it is often called XLNet-style.")),
    Reference("deberta_code", "Microsoft", "Microsoft's DeBERTa code", 2021, "DeBERTa: make_log_bucket_position",
              "GitHub microsoft/DeBERTa", "https://github.com/microsoft/DeBERTa",
              note=N_("Log-bucketed relative positions of DeBERTa-v2 and v3.")),
    Reference("alibi", "Press, Smith, Lewis", "Press et al. 2022", 2022,
              "Train Short, Test Long: Attention with Linear Biases Enables Input Length Extrapolation", "ICLR 2022",
              _arxiv("2108.12409"), "2108.12409", N_("ALiBi: a linear distance penalty with geometric head slopes.")),
    # -- context extension -------------------------------------------------------------------------
    Reference("pi", "Chen, Wong, Chen, Tian", "Chen et al. 2023", 2023,
              "Extending Context Window of Large Language Models via Positional Interpolation", "arXiv",
              _arxiv("2306.15595"), "2306.15595", N_("Position Interpolation: position m becomes m/s.")),
    Reference("ntk_aware", "bloc97", "bloc97 2023", 2023,
              "NTK-Aware Scaled RoPE allows LLaMA models to have extended (8k+) context size without any fine-tuning "
              "and minimal perplexity degradation", "Reddit r/LocalLLaMA",
              "https://www.reddit.com/r/LocalLLaMA/comments/14lz7j5/", note=N_(
                  "NTK-aware scaling: raise the base to b·s^(d/(d−2))."), date="2023-06-29"),
    Reference("dynamic_ntk", "emozilla", "emozilla 2023", 2023,
              "Dynamically Scaled RoPE further increases performance of long context LLaMA with zero fine-tuning",
              "Reddit r/LocalLLaMA", "https://www.reddit.com/r/LocalLLaMA/comments/14mrgpr/",
              note=N_("Dynamic NTK: choose the scale from the current length."), date="2023-06-30"),
    Reference("yarn", "Peng, Quesnelle, Fan, Shippole", "Peng et al. 2023", 2023,
              "YaRN: Efficient Context Window Extension of Large Language Models", "ICLR 2024", _arxiv("2309.00071"),
              "2309.00071", N_("NTK-by-parts (the ramp γ(r)), YaRN's attention temperature, dynamic scaling.")),
    Reference("drope", "Gelberg, Eguchi, Akiba, Cetin", "Gelberg et al. 2025", 2025,
              "Extending the Context of Pretrained LLMs by Dropping Their Positional Embeddings", "arXiv; ICLR 2026",
              _arxiv("2512.12167"), "2512.12167",
              N_("DroPE: train with RoPE, remove the rotation afterwards and recalibrate briefly; the tiny model's "
                 "fine-tune beside YaRN, scored on next-character accuracy and passkey retrieval.")),
    Reference("su_beta_base", "Su Jianlin", "Su 2023a", 2023, "Transformer升级之路：10、RoPE是一种β进制编码 "
              "(RoPE is a β-base encoding)", "Scientific Spaces (kexue.fm)", "https://kexue.fm/archives/9675",
              note=N_("RoPE as a number in base β = b^(2/d); NTK-aware scaling as a base conversion; an extrapolation "
                      "table (train 512, test 4096)."), date="2023-07-06"),
    Reference("rerope", "Su Jianlin", "Su 2023b", 2023, "Transformer升级之路：12、无限外推的ReRoPE？ "
              "(ReRoPE for unlimited extrapolation?)", "Scientific Spaces (kexue.fm)", "https://kexue.fm/archives/9708",
              note=N_("ReRoPE and Leaky ReRoPE: clip relative positions beyond a window."), date="2023-08-07"),
    Reference("leaky_rerope_inverse", "Su Jianlin", "Su 2023c", 2023, "Transformer升级之路：13、逆用Leaky ReRoPE "
              "(Using Leaky ReRoPE in reverse)", "Scientific Spaces (kexue.fm)", "https://kexue.fm/archives/9728",
              note=N_("Train with Leaky ReRoPE, run with plain RoPE."), date="2023-08-14"),
    Reference("logn", "Su Jianlin", "Su 2021c", 2021, "从熵不变性看Attention的Scale操作 (The scale of attention from "
              "entropy invariance)", "Scientific Spaces (kexue.fm)", "https://kexue.fm/archives/8823",
              note=N_("log-n scaling: multiply logits by log_L(n) to keep attention entropy steady."),
              date="2021-12-21"),
    Reference("chiang_cholak", "Chiang, Cholak", "Chiang & Cholak 2022", 2022,
              "Overcoming a Theoretical Limitation of Self-Attention", "ACL 2022", _arxiv("2202.12172"), "2202.12172",
              N_("Scaling attention logits by log n for length generalisation.")),
    Reference("qwen", "Bai, Bai, Chu, et al.", "Bai et al. 2023", 2023, "Qwen Technical Report", "arXiv",
              _arxiv("2309.16609"), "2309.16609",
              N_("Longer context at inference: dynamic NTK and log-n scaling of the logits beyond the training length.")),
    Reference("abf", "Xiong, Liu, Molybog, et al.", "Xiong et al. 2023", 2023,
              "Effective Long-Context Scaling of Foundation Models", "NAACL 2024", _arxiv("2309.16039"), "2309.16039",
              N_("Adjusted base frequency (ABF): continue training with a larger RoPE base.")),
    Reference("code_llama", "Rozière, Gehring, Gloeckle, et al.", "Rozière et al. 2023", 2023,
              "Code Llama: Open Foundation Models for Code", "arXiv", _arxiv("2308.12950"), "2308.12950",
              N_("A base of 10^6 for 16k-token context.")),
    Reference("llama3", "Llama Team, AI @ Meta", "Llama Team 2024", 2024, "The Llama 3 Herd of Models", "arXiv",
              _arxiv("2407.21783"), "2407.21783", N_("Llama 3's RoPE base of 500,000 and the Llama 3.1 frequency bands.")),
    Reference("longrope", "Ding, Zhang, Zhang, Xu, Shang, Xu, Yang, Yang", "Ding et al. 2024", 2024,
              "LongRoPE: Extending LLM Context Window Beyond 2 Million Tokens", "ICML 2024", _arxiv("2402.13753"),
              "2402.13753", N_("Per-pair rescale factors found by search; short and long factor sets.")),
    Reference("base_bound", "Men, Xu, Zhang, Xu, Hu, Huang, Wang", "Men et al. 2024", 2024,
              "Base of RoPE Bounds Context Length", "NeurIPS 2024", _arxiv("2405.14591"), "2405.14591",
              N_("A lower bound on the RoPE base for a given context length.")),
    Reference("dca", "An, Huang, Zhang, Gong, Qiu, Zhou, Kong", "An et al. 2024", 2024,
              "Training-Free Long-Context Scaling of Large Language Models", "ICML 2024", _arxiv("2402.17463"),
              "2402.17463", N_("Dual Chunk Attention: intra-chunk, successive-chunk and inter-chunk positions.")),
    # -- precision ---------------------------------------------------------------------------------
    Reference("bf16_rope", "Wang, Ye, Liu, et al.", "Wang et al. 2024", 2024,
              "When Precision Meets Position: BFloat16 Breaks Down RoPE in Long-Context Training", "arXiv",
              _arxiv("2411.13476"), "2411.13476", N_("BFloat16 breaks RoPE's relative-position property at long context.")),
    Reference("ieee754", "IEEE", "IEEE 754-2019", 2019, "IEEE Standard for Floating-Point Arithmetic",
              "IEEE Std 754-2019", "https://doi.org/10.1109/IEEESTD.2019.8766229",
              note=N_("float16, float32 and float64: significand widths, rounding to nearest even.")),
    Reference("rope_float32", "Han", "Han 2024", 2024, "RoPE loses precision for Llama / Gemma + Gemma logits.float() "
              "(pull request #29285)", "GitHub huggingface/transformers",
              "https://github.com/huggingface/transformers/pull/29285", note=N_(
                  "RoPE's angles and cos/sin computed in float32 with autocast off, cast to the model's dtype at the "
                  "end: the fix transformers adopted."), date="2024-02-26"),
    Reference("su_base_bound", "Su Jianlin", "Su 2024", 2024, "Transformer升级之路：18、RoPE的底数选择原则 "
              "(Choosing RoPE's base)", "Scientific Spaces (kexue.fm)", "https://kexue.fm/archives/10122",
              note=N_("A reading of Men et al.'s bound with a finer numerical search: the valid bases are not an "
                      "interval, so bisection fails."), date="2024-05-29"),
    # -- public bug threads: the bug classes the implementation check recognises -----------------------
    Reference("bug_yarn_betas", "shuhuayu, tianyu-l", "torchtitan #3787", 2026,
              "Unify CosSinRoPE and ComplexRoPE YaRN computation", "GitHub pytorch/torchtitan, pull request #3787",
              "https://github.com/pytorch/torchtitan/pull/3787",
              note=N_("One of two YaRN paths computed the low end of the ramp from beta_slow and the high end from "
                      "beta_fast."), date="2026-07-01"),
    Reference("bug_yarn_truncate", "ashors1", "vLLM #28244", 2025,
              "Add truncate arg to yarn to match openai implementation of gpt-oss",
              "GitHub vllm-project/vllm, pull request #28244 (issue #27722)",
              "https://github.com/vllm-project/vllm/pull/28244",
              note=N_("YaRN always rounded the correction range, though gpt-oss's config sets truncate: false."),
              date="2025-11-06"),
    Reference("bug_scaling_dropped", "1qh", "mlx-vlm #1710", 2026,
              "fix(rope): apply declared rope_scaling in models that ignored it (Llama-3.2-Vision and 9 others)",
              "GitHub Blaizzy/mlx-vlm, pull request #1710", "https://github.com/Blaizzy/mlx-vlm/pull/1710",
              note=N_("Ten models parsed rope_scaling and then built plain RoPE, so long contexts ran unscaled."),
              date="2026-07-24"),
    Reference("bug_attention_factor_missing", "sempervictus", "xinfer #329", 2026, "Propagate YARN to attention scale",
              "GitHub guoqingbao/xinfer, pull request #329", "https://github.com/guoqingbao/xinfer/pull/329",
              note=N_("YaRN's attention scaling was applied only on the MLA path; other models ran without it."),
              date="2026-04-27"),
    Reference("bug_attention_factor_twice", "joerowell", "SGLang #33558", 2026,
              "[Laguna] fix YaRN mscale double-application in rope config",
              "GitHub sgl-project/sglang, pull request #33558", "https://github.com/sgl-project/sglang/pull/33558",
              note=N_("The config's final attention_factor was multiplied by YaRN's own mscale again, squaring the "
                      "scale."), date="2026-08-04"),
    Reference("bug_pairing", "bararchy", "shainet #111", 2026, "fix: RoPE half-split convention + LLaMA 3 rope_scaling",
              "GitHub NeuraLegion/shainet, pull request #111", "https://github.com/NeuraLegion/shainet/pull/111",
              note=N_("Interleaved pairs applied to half-split Llama checkpoints: right for a token or two, then "
                      "garbage."), date="2026-06-10"),
    Reference("bug_default_base", "Osamaali313", "candle #3746", 2026,
              "Fix Yi RoPE ignoring cfg.rope_theta (hardcoded 10000)", "GitHub huggingface/candle, pull request #3746",
              "https://github.com/huggingface/candle/pull/3746",
              note=N_("A model's rope_theta of 5,000,000 was read and then replaced by a hard-coded 10,000."),
              date="2026-07-16"),
    Reference("bug_layer_kinds", "joeldushouyu", "llama.cpp #14367", 2025,
              "Misc. bug: Inconsistent Gemma3 implementation in rope factor",
              "GitHub ggml-org/llama.cpp, issue #14367", "https://github.com/ggml-org/llama.cpp/issues/14367",
              note=N_("Gemma 3's sliding layers were assumed to share the full-attention layers' frequency base and "
                      "scale, which transformers keeps apart."), date="2025-06-24"),
    Reference("bug_partial_rotary", "lettt325", "MaxText #4616", 2026,
              "partial_rotary_factor is ignored when use_mrope is true", "GitHub AI-Hypercomputer/maxtext, issue #4616",
              "https://github.com/AI-Hypercomputer/maxtext/issues/4616",
              note=N_("RoPE was applied to the whole head instead of the configured quarter, silently."),
              date="2026-07-26"),
    Reference("bug_low_precision", "danielhanchen", "transformers #29285", 2024,
              "RoPE loses precision for Llama / Gemma + Gemma logits.float()",
              "GitHub huggingface/transformers, pull request #29285",
              "https://github.com/huggingface/transformers/pull/29285",
              note=N_("Under bfloat16 autocast the RoPE frequencies were computed in bfloat16."), date="2024-02-26"),
    Reference("bug_llama3_bands", "rasbt, Andrei-Aksionov", "LitGPT #1745", 2024, "Improve rope",
              "GitHub Lightning-AI/litgpt, pull request #1745", "https://github.com/Lightning-AI/litgpt/pull/1745",
              note=N_("A review of Llama 3.1's bands in which the medium band's bounds were nearly written the wrong "
                      "way round."), date="2024-09-25"),
    Reference("bug_longrope_switch", "MatthewBonanni", "vLLM #27431", 2025,
              "[Bugfix] In LongRoPE, decide short vs long based on max_model_len",
              "GitHub vllm-project/vllm, pull request #27431 (issue #27414)",
              "https://github.com/vllm-project/vllm/pull/27431",
              note=N_("Phi-3.5 produced random tokens past the switch between LongRoPE's short and long factors."),
              date="2025-10-23"),
    Reference("bug_exponent_offset", "nkkbr", "llama-from-scratch #8", 2024, "get_rotary_matrix",
              "GitHub bkitano/llama-from-scratch, issue #8", "https://github.com/bkitano/llama-from-scratch/issues/8",
              note=N_("A tutorial's RoPE computed θ = 10000^(−2(i − 1)/d) with i from 0: the exponent's index started "
                      "at −2 instead of 0."), date="2024-05-14"),
    Reference("bug_exponent_width", "HongseungYu", "pie #602", 2026,
              "rope_partial uses head_dim instead of rotary_dim for frequencies and pair offset",
              "GitHub pie-project/pie, issue #602", "https://github.com/pie-project/pie/issues/602",
              note=N_("Partial-rotary kernels used θ^(−2i/head_dim) where transformers uses θ^(−2i/rotary_dim); "
                      "accuracy fell with context length."), date="2026-09-16"),
    Reference("bug_base_overflow", "bong-water-water-bong", "1bit-MONSTER #634", 2026,
              "rope_theta fixed-point storage overflows uint32 for large models",
              "GitHub 1bit-MONSTER/1bit-MONSTER, issue #634", "https://github.com/1bit-MONSTER/1bit-MONSTER/issues/634",
              note=N_("rope_theta stored as rope_theta·1000 in a uint32 wrapped around for bases above about "
                      "4.3 million."), date="2026-07-22"),
    Reference("bug_dynamic_ntk", "macheng6, ymwangg", "vLLM #5093", 2024,
              "The implementation of DynamicNTKScalingRotaryEmbedding may have errors",
              "GitHub vllm-project/vllm, issue #5093", "https://github.com/vllm-project/vllm/issues/5093",
              note=N_("Dynamic NTK's base was computed once, for the longest length: 'the current dynamic NTK scaling "
                      "is actually static NTK scaling'."), date="2024-05-29"),
    Reference("bug_rope_type", "inureyes", "mlxcel #1324", 2026,
              "fix(internlm3): stop doubling RoPE positions under dynamic NTK scaling",
              "GitHub lablup/mlxcel, issue #1324", "https://github.com/lablup/mlxcel/issues/1324",
              note=N_("A dynamic NTK config (factor 6) ran as a linear position scale of 2, and 2 was reused as the "
                      "NTK factor."), date="2026-08-22"),
    Reference("bug_original_length", "yzlnew", "Megatron-LM #1418", 2025,
              "Dual meaning of max_position_embeddings, computing both embedding shape & yarn scaling base",
              "GitHub NVIDIA/Megatron-LM, issue #1418", "https://github.com/NVIDIA/Megatron-LM/issues/1418",
              note=N_("One setting served as the extended length and as YaRN's original length, which must stay "
                      "original_max_position_embeddings."), date="2025-05-02"),
    Reference("bug_longrope_divide", "liuwei-git", "llama.cpp #7225", 2024, "Add phi3 128K model support",
              "GitHub ggml-org/llama.cpp, pull request #7225", "https://github.com/ggml-org/llama.cpp/pull/7225",
              note=N_("Quotes Phi-3's reference LongRoPE code: inv_freq = 1 / (ext_factors · base^(2i/d)), the "
                      "factors divide θᵢ."), date="2024-05-11"),
    Reference("bug_deepseek_mscale", "dyhsup", "SGLang #22711", 2026,
              "fix: correct YaRN RoPE mscale calculation for models with mscale/mscale_all_dim",
              "GitHub sgl-project/sglang, pull request #22711", "https://github.com/sgl-project/sglang/pull/22711",
              note=N_("With mscale = mscale_all_dim = 1 transformers' factor on cos and sin is 1; the engine put "
                      "0.1·ln 16 + 1 ≈ 1.277 there."), date="2026-04-13"),
    Reference("deepseek_softmax_mscale", "hmellor, vasqu", "transformers #47435", 2026,
              "Fix yarn mscale_all_dim for DeepSeek v2 and Mistral 4",
              "GitHub huggingface/transformers, pull request #47435",
              "https://github.com/huggingface/transformers/pull/47435",
              note=N_("The code line: self.scaling = self.scaling * mscale * mscale, mscale = "
                      "yarn_get_mscale(factor, mscale_all_dim), in DeepSeek's attention."), date="2026-07-20"),
    # -- public bug threads and code: the rotation probe's bug classes -----------------------------------------
    Reference("probe_positions", "garrett361", "prime-rl #3466", 2026,
              "fix(trainer): zero-index position_ids fallback in LM-head wrapper",
              "GitHub PrimeIntellect-ai/prime-rl, pull request #3466",
              "https://github.com/PrimeIntellect-ai/prime-rl/pull/3466",
              note=N_("A fallback built position ids from 1 instead of 0: invisible to q·k, wrong wherever absolute "
                      "positions count."), date="2026-09-02"),
    Reference("probe_cache_precision", "KeremTurgutlu, ArthurZucker, jph00", "transformers #25681", 2023,
              "LlamaRotaryEmbedding (wrong cache value when casting model to float16/bfloat16)",
              "GitHub huggingface/transformers, issue #25681",
              "https://github.com/huggingface/transformers/issues/25681",
              note=N_("The cos/sin cache went wrong when the model was cast to half precision: the buffers it is built "
                      "from were cast too."), date="2023-08-23"),
    Reference("probe_partial_rotary", "t8", "cascadia #69", 2026,
              "feat(shard): partial rotary support + config-first arch rejection",
              "GitHub labscommunity/cascadia, pull request #69", "https://github.com/labscommunity/cascadia/pull/69",
              note=N_("θ zero-padded to the whole head and the whole head rotated: the cos/sin values matched, but "
                      "112 of 128 rotated dimensions had the wrong partner."), date="2026-06-03"),
    Reference("hf_rotary_apply", "Hugging Face", "transformers' modeling_llama", 2025,
              "modeling_llama.py: LlamaRotaryEmbedding.forward (cos, sin × attention_scaling), apply_rotary_pos_emb",
              "GitHub huggingface/transformers",
              "https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama/modeling_llama.py",
              note=N_("cos and sin carry the attention factor and rotate q and k alike, so q·k is scaled by its "
                      "square.")),
    Reference("probe_mrope_sections", "shan-chen-feng", "xLLM #746", 2026,
              "bugfix: fix mrope calculation in the multimodal situation", "GitHub xLLM-AI/xllm, pull request #746",
              "https://github.com/xLLM-AI/xllm/pull/746",
              note=N_("After cat(cos, cos) the M-RoPE sections must be taken from both halves of the table."),
              date="2026-01-16"),
    # -- maths ----------------------------------------------------------------------------------
    # -- hybrid models: sliding windows, NoPE layers, attention temperature -------------------------------
    Reference("gemma3", "Gemma Team: Kamath, Ferret, Pathak, et al.", "Gemma Team 2025", 2025,
              "Gemma 3 Technical Report", "arXiv", _arxiv("2503.19786"), "2503.19786",
              N_("Five sliding-window layers (1,024 tokens) per full-attention layer; RoPE base 10k on the local "
                 "layers, 1M on the global ones.")),
    Reference("exaone4", "Bae, Choi, Choi, et al. (LG AI Research)", "LG AI Research 2025", 2025,
              "EXAONE 4.0: Unified Large Language Models Integrating Non-reasoning and Reasoning Modes", "arXiv",
              _arxiv("2507.11407"), "2507.11407",
              N_("Three sliding-window layers (4K tokens) per global layer, and no RoPE in the global layers.")),
    Reference("rope_to_nope", "Yang, Venkitesh, Talupuru, Lin, Cairuz, Blunsom, Locatelli", "Yang et al. 2025", 2025,
              "Rope to Nope and Back Again: A New Hybrid Attention Strategy", "arXiv", _arxiv("2501.18795"),
              "2501.18795",
              N_("RNoPE-SWA: full-attention layers without position encoding alternating with RoPE layers over a "
                 "sliding window.")),
    Reference("llama4", "Meta AI", "Meta AI 2025", 2025,
              "The Llama 4 herd: The beginning of a new era of natively multimodal AI innovation", "Meta AI blog",
              "https://ai.meta.com/blog/llama-4-multimodal-intelligence/", date="2025-04-05",
              note=N_("Llama 4: attention layers without position embeddings among the RoPE layers, and inference-time "
                      "temperature scaling of attention.")),
    Reference("llama4_code", "Hugging Face", "transformers' modeling_llama4", 2025,
              "modeling_llama4.py: Llama4TextAttention (no_rope_layers, attn_temperature_tuning)",
              "GitHub huggingface/transformers",
              "https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama4/modeling_llama4.py",
              note=N_("Which layers skip RoPE and the factor on their queries, as the page computes and tests them.")),
    Reference("ssmax", "Nakanishi", "Nakanishi 2025", 2025, "Scalable-Softmax Is Superior for Attention", "arXiv",
              _arxiv("2501.19399"), "2501.19399",
              N_("Softmax flattens as the number of keys grows; scaling the logits with log n keeps attention "
                 "focused.")),
    # -- multimodal RoPE ----------------------------------------------------------------------------
    Reference("qwen2_vl", "Wang, Bai, Tan, et al.", "Wang et al. 2024", 2024,
              "Qwen2-VL: Enhancing Vision-Language Model's Perception of the World at Any Resolution", "arXiv",
              _arxiv("2409.12191"), "2409.12191",
              N_("M-RoPE: each token gets a time, a height and a width position, and the head's pairs are split among "
                 "them.")),
    Reference("qwen2_5_vl", "Bai, Chen, Liu, et al.", "Bai et al. 2025a", 2025, "Qwen2.5-VL Technical Report", "arXiv",
              _arxiv("2502.13923"), "2502.13923", N_("Qwen2.5-VL keeps M-RoPE's blocks of pairs per axis.")),
    Reference("qwen3_vl", "Bai, Cai, Chen, et al.", "Bai et al. 2025b", 2025, "Qwen3-VL Technical Report", "arXiv",
              _arxiv("2511.21631"), "2511.21631",
              N_("M-RoPE with time, height and width taking turns pair by pair (mrope_interleaved), so each has "
                 "fast and slow pairs; video time as text timestamps.")),
    Reference("mrope_interleave", "Huang, Liu, Song, Hou, Chang, Lin, Bai", "Huang et al. 2025", 2025,
              "Revisiting Multimodal Positional Encoding in Vision-Language Models", "arXiv", _arxiv("2510.23095"),
              "2510.23095", N_("Why every axis should have the full range of frequencies: M-RoPE's axes taking turns pair by pair "
                 "against its blocks.")),
    Reference("qwen2_vl_code", "Hugging Face", "transformers' modeling_qwen2_vl", 2025,
              "modeling_qwen2_vl.py: get_rope_index, get_vision_position_ids", "GitHub huggingface/transformers",
              "https://github.com/huggingface/transformers/blob/main/src/transformers/models/qwen2_vl/"
              "modeling_qwen2_vl.py",
              note=N_("The positions of text and image tokens that the M-RoPE page computes and is tested against.")),
    Reference("kluyver", "Kluyver", "Kluyver 1906", 1906, "A local probability problem",
              "Proc. Royal Netherlands Academy of Arts and Sciences 8, 341–350",
              "https://dwc.knaw.nl/DL/publications/PU00013859.pdf",
              note=N_("The mean length of a random walk of unit steps, used for the random-phase level.")),
)

REFERENCES: dict[str, Reference] = {reference.key: reference for reference in _ALL}


def reference(key: str) -> Reference:
    if key not in REFERENCES:
        raise KeyError(f"no reference {key!r}; known: {', '.join(REFERENCES)}")
    return REFERENCES[key]


def cite(key: str, where: str = "") -> str:
    """A short markdown citation: ``[Peng et al. 2023](https://arxiv.org/abs/2309.00071)``, optionally with
    a place in the source (``§3.2``, ``eq. 17``) inside the link text."""
    source = reference(key)
    text = f"{source.short}, {where}" if where else source.short
    return f"[{text}]({source.url})"


def full_entry(key: str) -> str:
    """One line of the References page (markdown)."""
    source = reference(key)
    arxiv = f" arXiv:{source.arxiv}." if source.arxiv else ""
    dated = f" {source.date}." if source.date else ""
    note = f" — {_(source.note)}" if source.note else ""
    return f"{source.authors} ({source.year}). [*{source.title}*]({source.url}). {source.venue}.{dated}{arxiv}{note}"
