"""What the torch of this test process offers, found by trying it (never by version strings), for tests
whose expected answer depends on it."""
import torch


def tensor_hooks_run_for_autograd_grad():
    """Whether a leaf's tensor hooks (Tensor.register_hook) run for torch.autograd.grad, not only for
    backward(): torch 2 runs them, 1.13 does not."""
    p, seen = torch.zeros(2, requires_grad=True), []
    p.register_hook(lambda g: seen.append(g))
    torch.autograd.grad((p * 2).sum(), [p])
    return bool(seen)


def global_optimizer_step_hooks():
    """torch.optim.optimizer's process-wide step hook tables (pre, post) of torch >= 2.0, else None.
    Private tables, read only to count what is registered."""
    from torch.optim import optimizer
    if not hasattr(optimizer, "register_optimizer_step_pre_hook"):
        return None
    return optimizer._global_optimizer_pre_hooks, optimizer._global_optimizer_post_hooks
