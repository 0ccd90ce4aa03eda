"""Response objects: typed attributes from JSON, the JSON kept, read-only, variants picked."""

from __future__ import annotations

import datetime
import unittest
from decimal import Decimal
from typing import Any, Dict, List, Literal

from merx import NOT_GIVEN
from merx._models import MerxObject, dict_of, list_of, model, one_of, register_fields
from merx._types import format_timestamp, omit_not_given
from merx.types import Product


class Order(MerxObject):
    type: Literal["order"]
    total: float


class Alert(MerxObject):
    type: Literal["alert"]
    message: str


class Batch(MerxObject):
    records: List[Any]
    by_name: Dict[str, Any]


register_fields(Order, [("type", "type", None), ("total", "total", None)], required=("type",), constants={"type": "order"})
register_fields(Alert, [("type", "type", None), ("message", "message", None)], required=("type", "message"), constants={"type": "alert"})
register_fields(Batch, [("records", "records", list_of(one_of((Order, Alert)))), ("by_name", "by_name", dict_of(model(Order)))])

PRODUCT = {
    "id": "prod_1", "object": "product", "sku": "A-1", "title": "A", "description": None, "price": "19.90", "currency": "USD",
    "status": "active", "inventory_quantity": None, "attributes": {"size": "M"}, "version": 3,
    "created_at": "2026-11-22T10:04:05.123Z", "updated_at": "2026-11-22T10:04:05.123Z", "added_later": True,
}


class ModelsTest(unittest.TestCase):
    def test_attributes_come_from_the_json_and_the_json_is_kept(self) -> None:
        product = Product(PRODUCT)
        self.assertEqual((product.sku, product.price, product.version, product.description), ("A-1", "19.90", 3, None))
        self.assertEqual(product.price_decimal, Decimal("19.90"))
        self.assertEqual(product.to_dict()["added_later"], True)  # a field newer than the library
        copy = product.to_dict()
        copy["sku"] = "changed"
        self.assertEqual(product.sku, "A-1")
        self.assertEqual(Product.from_dict(PRODUCT), product)
        self.assertIn("sku='A-1'", repr(product))

    def test_objects_are_read_only(self) -> None:
        product = Product(PRODUCT)
        with self.assertRaises(AttributeError):
            product.sku = "B-2"  # type: ignore[misc]
        with self.assertRaises(TypeError):
            hash(product)

    def test_variants_nested_lists_and_maps_are_converted(self) -> None:
        batch = Batch({"records": [{"type": "alert", "message": "disk"}, {"type": "order", "total": 3}, {"type": "unknown"}], "by_name": {"a": {"type": "order", "total": 1}}})
        self.assertIsInstance(batch.records[0], Alert)
        self.assertIsInstance(batch.records[1], Order)
        self.assertEqual(batch.records[2], {"type": "unknown"})  # no variant fits: the JSON as it is
        self.assertIsInstance(batch.by_name["a"], Order)

    def test_not_given_is_left_out_and_none_is_kept(self) -> None:
        self.assertEqual(omit_not_given({"a": NOT_GIVEN, "b": None, "c": 1}), {"b": None, "c": 1})
        self.assertFalse(NOT_GIVEN)

    def test_timestamps_are_written_the_api_way(self) -> None:
        moment = datetime.datetime(2026, 11, 22, 11, 4, 5, 123456, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))
        self.assertEqual(format_timestamp(moment), "2026-11-22T10:04:05.123Z")
        self.assertEqual(format_timestamp(datetime.datetime(2026, 1, 2, 3, 4, 5)), "2026-01-02T03:04:05.000Z")
        self.assertEqual(format_timestamp("2026-01-02T03:04:05.000Z"), "2026-01-02T03:04:05.000Z")


if __name__ == "__main__":
    unittest.main()
