"""Drawing and binding, knowing nothing of serving: the kit (``kit``), an explorer's declaration
(``explorer``), the website (``site``) and Jupyter (``jupyter``). See AUTHORING.md."""
from . import kit
from .explorer import BUILDERS, Explorer, Layer, buttons, explorer, find, menu, slider, steps

__all__ = ["BUILDERS", "Explorer", "Layer", "buttons", "explorer", "find", "kit", "menu", "slider", "steps"]
