# Serves the XGBoost model the pipeline's train step wrote beside this file (model.ubj).
import os

import numpy as np
import triton_python_backend_utils as pb_utils
import xgboost as xgb


class TritonPythonModel:
    def initialize(self, args):
        here = os.path.join(args["model_repository"], args["model_version"])
        self.booster = xgb.Booster(model_file=os.path.join(here, "model.ubj"))

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "input__0").as_numpy()
            y = self.booster.inplace_predict(x).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("output__0", y)]))
        return responses
