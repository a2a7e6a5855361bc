// The "tensor" family plugin: one descriptor per rule; each rule's documentation is its kDescription.
#include "tensor_rules.h"

using vigil::rules::tensor::AllZero;
using vigil::rules::tensor::ExplodingTensor;
using vigil::rules::tensor::SimilarAcrossRuns;
using vigil::rules::tensor::TensorVariance;
using vigil::rules::tensor::UnchangedTensor;
using vigil::rules::tensor::VanishingGradient;
using vigil::rules::tensor::WeightUpdateRatio;

VIGIL_PLUGIN("vigil.builtin.tensor", "1.0.0",
             VIGIL_RULE(VanishingGradient, "vigil.builtin.VanishingGradient", "VanishingGradient",
                        VanishingGradient::kDescription),
             VIGIL_RULE(ExplodingTensor, "vigil.builtin.ExplodingTensor", "ExplodingTensor",
                        ExplodingTensor::kDescription),
             VIGIL_RULE(AllZero, "vigil.builtin.AllZero", "AllZero", AllZero::kDescription),
             VIGIL_RULE(UnchangedTensor, "vigil.builtin.UnchangedTensor", "UnchangedTensor",
                        UnchangedTensor::kDescription),
             VIGIL_RULE(TensorVariance, "vigil.builtin.TensorVariance", "TensorVariance", TensorVariance::kDescription),
             VIGIL_RULE(WeightUpdateRatio, "vigil.builtin.WeightUpdateRatio", "WeightUpdateRatio",
                        WeightUpdateRatio::kDescription),
             VIGIL_RULE(SimilarAcrossRuns, "vigil.builtin.SimilarAcrossRuns", "SimilarAcrossRuns",
                        SimilarAcrossRuns::kDescription));
