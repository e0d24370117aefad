import torch
import torch.nn as nn
import torch.nn.functional as F


class LMHeadLoss(nn.Module):
    """Token-level LM loss: logits [B, T, V] flattened, pad id 0 mapped to ignore_index."""

    def __init__(self, vocab: int, *, smoothing: float = 0.0, pad_id: int = 0):
        super().__init__()
        self.vocab, self.smoothing, self.pad_id = vocab, smoothing, pad_id

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.view(-1, self.vocab).float(), labels.view(-1),
                               label_smoothing=self.smoothing)


Model = LMHeadLoss


def get_inputs():
    labels = torch.randint(1, 32000, (8, 512))
    labels[:, 400:] = -100
    return [torch.randn(8, 512, 32000, dtype=torch.bfloat16), labels]


def get_init_inputs():
    return [32000]
