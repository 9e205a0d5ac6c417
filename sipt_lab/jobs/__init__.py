"""What a user runs on their own data: pre-training (``pretrain``), the λ sweep, fine-tuning and
probing, embedding, the model card of an export, and ``advise`` (will SIPT on this graph help?)."""
