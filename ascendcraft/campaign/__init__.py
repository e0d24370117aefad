"""Campaigns (issue 16): many ops tuned under one time budget, stopped and resumed, with a
morning report (:mod:`.run`, the policy in :mod:`.plan`, the record in :mod:`.state`, the
report in :mod:`.report`)."""

from .run import CampaignConfig, CampaignInterrupted, CampaignResult, campaign_ops, run_campaign

__all__ = ["CampaignConfig", "CampaignInterrupted", "CampaignResult", "campaign_ops",
           "run_campaign"]
