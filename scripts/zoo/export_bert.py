"""Exports a BERT-base-shaped encoder: export_bert.py bert_base OUT_DIR

12 post-norm layers (nn.TransformerEncoderLayer, hidden 768, 12 heads, ffn 3072, exact GELU),
word + position embeddings and an embedding LayerNorm; vocab 30522, sequence 128.
Inputs: 'input_ids' i64 [1,128], 'attention_mask' i64 [1,128] (1 = token, 0 = padding).
Output: 'last_hidden_state' f32 [1,128,768]. Random weights under a fixed seed.
"""
import torch
from torch import nn

import zoo_common as zc

VOCAB, HIDDEN, LAYERS, HEADS, FFN, SEQ, MAX_POS = 30522, 768, 12, 12, 3072, 128, 512
REAL_TOKENS = 112  # the last 16 positions are padding, so the key-padding mask matters


class PostNormLayer(nn.TransformerEncoderLayer):
    """nn.TransformerEncoderLayer whose eval forward always takes the composite path.

    In eval mode torch 1.13 routes the layer to the fused torch._transformer_encoder_layer_fwd,
    which the ONNX exporter cannot translate; this is the same computation written as the
    class's own slow path. (nn.MultiheadAttention's fused path is not taken either: it
    requires dropout == 0, and the attention keeps the default 0.1, a no-op in eval.)"""

    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        x = self.norm1(src + self._sa_block(src, src_mask, src_key_padding_mask))
        return self.norm2(x + self._ff_block(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(VOCAB, HIDDEN)
        self.pos = nn.Embedding(MAX_POS, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        # Separately constructed layers: nn.TransformerEncoder would deep-copy one layer, and
        # identical weights get merged by the exporter — not what a trained model looks like.
        self.layers = nn.ModuleList(
            PostNormLayer(HIDDEN, HEADS, FFN, activation="gelu", batch_first=True, norm_first=False,
                          layer_norm_eps=1e-12) for _ in range(LAYERS))
        with torch.no_grad():
            nn.init.normal_(self.word.weight, std=0.02)  # BERT's initialiser range
            nn.init.normal_(self.pos.weight, std=0.02)
            # Non-trivial LayerNorm scales, and no all-zero biases (attention biases start at
            # zero): a kernel that ignores a parameter must fail parity, and identical zero
            # tensors would be merged by the exporter into one shared initializer.
            for m in self.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.copy_(1 + 0.1 * torch.randn_like(m.weight))
            for p in self.parameters():
                if not p.any():
                    p.copy_(0.02 * torch.randn_like(p))

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.norm(self.word(input_ids) + self.pos(positions))
        padding = attention_mask == 0
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=padding)
        return x


def main():
    name, out_dir = zc.main_args()
    zc.seed_everything()
    with zc.Timer("build"):
        model = Encoder().eval()
    r = zc.rng()
    ids = r.randint(1000, VOCAB, size=(1, SEQ)).astype("int64")
    ids[0, 0] = 101  # [CLS]
    ids[0, REAL_TOKENS - 1] = 102  # [SEP]
    ids[0, REAL_TOKENS:] = 0  # [PAD]
    mask = (ids != 0).astype("int64")
    zc.export(model, out_dir, {"input_ids": ids, "attention_mask": mask},
              ["input_ids", "attention_mask"], ["last_hidden_state"])


if __name__ == "__main__":
    main()
