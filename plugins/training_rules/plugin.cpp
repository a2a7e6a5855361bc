// The "training" family plugin: registration of its rules (one VIGIL_PLUGIN per library).
#include "training_rules.h"

using namespace vigil::training;

VIGIL_PLUGIN("vigil.builtin.training", "1.0.0",
             VIGIL_RULE(LossNotDecreasing, "vigil.builtin.LossNotDecreasing", "LossNotDecreasing",
                        LossNotDecreasing::kDescription),
             VIGIL_RULE(Overfit, "vigil.builtin.Overfit", "Overfit", Overfit::kDescription),
             VIGIL_RULE(Overtraining, "vigil.builtin.Overtraining", "Overtraining", Overtraining::kDescription),
             VIGIL_RULE(DeadRelu, "vigil.builtin.DeadRelu", "DeadRelu", DeadRelu::kDescription),
             VIGIL_RULE(SaturatedActivation, "vigil.builtin.SaturatedActivation", "SaturatedActivation",
                        SaturatedActivation::kDescription),
             VIGIL_RULE(PoorWeightInitialization, "vigil.builtin.PoorWeightInitialization", "PoorWeightInitialization",
                        PoorWeightInitialization::kDescription),
             VIGIL_RULE(StalledTrainingRule, "vigil.builtin.StalledTrainingRule", "StalledTrainingRule",
                        StalledTrainingRule::kDescription));
