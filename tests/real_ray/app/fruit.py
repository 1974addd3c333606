"""A minimal Ray Serve application the real-Ray test deploys (imported through PYTHONPATH)."""

from ray import serve


@serve.deployment
class Fruit:
    def __call__(self, request: object) -> dict[str, object]:
        return {"fruit": "mango", "price": 3}


app = Fruit.bind()
