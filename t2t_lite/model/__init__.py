"""The Transformer model: attention, the other layers, the encoder-decoder."""
