"""Pictures of a trained model: attention maps."""
