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
    Reference("floater", "Liu, Yu, Dhillon, Hsieh", "Liu et al. 2020", 2020,
              "Learning to Encode Position for Transformer with Continuous Dynamical Model", "ICML 2020",
              _arxiv("2003.09229"), "2003.09229", N_("FLOATER: positions from an ODE; sinusoidal is one solution.")),
    Reference("complex_order", "Wang, Zhao, Zhang, Li, Wang, Simonsen", "Wang et al. 2020", 2020,
              "Encoding word order in complex embeddings", "ICLR 2020", _arxiv("1912.12333"), "1912.12333",
              N_("Complex-order embeddings: each word a wave over positions.")),
    Reference("cnn_position", "Islam, Jia, Bruce", "Islam et al. 2020", 2020,
              "How Much Position Information Do Convolutional Neural Networks Encode?", "ICLR 2020",
              _arxiv("2001.08248"), "2001.08248", N_("CNNs read absolute position from zero padding.")),
    # -- relative encodings and biases -------------------------------------------------------------
    Reference("shaw", "Shaw, Uszkoreit, Vaswani", "Shaw et al. 2018", 2018,
              "Self-Attention with Relative Position Representations", "NAACL 2018", _arxiv("1803.02155"),
              "1803.02155", N_("Relative position vectors in the keys and values, clipped at a maximum distance.")),
    Reference("transformer_xl", "Dai, Yang, Yang, Carbonell, Le, Salakhutdinov", "Dai et al. 2019", 2019,
              "Transformer-XL: Attentive Language Models Beyond a Fixed-Length Context", "ACL 2019",
              _arxiv("1901.02860"), "1901.02860", N_("Relative sinusoidal R_{i−j} with trainable u and v.")),
    Reference("t5", "Raffel, Shazeer, Roberts, Lee, Narang, Matena, Zhou, Li, Liu", "Raffel et al. 2020", 2020,
              "Exploring the Limits of Transfer Learning with a Unified Text-to-Text Transformer", "JMLR 2020",
              _arxiv("1910.10683"), "1910.10683", N_("A learned scalar bias per log-spaced relative-distance bucket.")),
    Reference("deberta", "He, Liu, Gao, Chen", "He et al. 2021", 2021,
              "DeBERTa: Decoding-enhanced BERT with Disentangled Attention", "ICLR 2021", _arxiv("2006.03654"),
              "2006.03654", N_("Content-to-position and position-to-content terms, no position-to-position.")),
    Reference("tupe", "Ke, He, Liu", "Ke et al. 2021", 2021, "Rethinking Positional Encoding in Language Pre-training",
              "ICLR 2021", _arxiv("2006.15595"), "2006.15595", N_("TUPE: untied position and content attention.")),
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
    # -- maths ----------------------------------------------------------------------------------
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
