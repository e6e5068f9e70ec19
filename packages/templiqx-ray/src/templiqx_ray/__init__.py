"""templiqx-ray."""
