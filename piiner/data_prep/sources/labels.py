"""Source label -> canonical type (``pii_schema.PII_TYPES``), or None for a label we decide is not PII here, or
``NOT_PII`` for a label whose spans are known to be no PII type at all (kept as negatives, see ``records``).

A label missing from its map is counted as ``unknown_label`` and treated as not PII; one mapped to None is
counted as ``not_pii_label``. Either way the text stays, unlabeled, so read the audit before trusting a new
source. Street parts and zip codes map to STREET_ADDRESS and cities, states and countries to LOCATION; the
merge rule in ``data_prep.records`` turns an adjacent run of them into one STREET_ADDRESS.

Deliberate "not PII" choices: times, titles (Mr., Dr.), job titles, card issuers, CVVs, API keys, cookies,
coordinates, national ID card numbers (no matching type in the 41; labeling them as passports would teach a
wrong type), race/ethnicity, language, education and employment status.
"""

import re

from ..records import NOT_PII

# ai4privacy (400k, 300k, open-500k). Keys are normalized: upper case, trailing digits dropped
# (GIVENNAME1 -> GIVENNAME, LASTNAME3 -> LASTNAME).
AI4PRIVACY = {
    "ACCOUNTNUM": "ACCOUNT_NUMBER", "ACCOUNTNUMBER": "ACCOUNT_NUMBER", "ACCOUNTNAME": None,
    "BUILDINGNUM": "STREET_ADDRESS", "BUILDINGNUMBER": "STREET_ADDRESS", "BUILDING": "STREET_ADDRESS",
    "STREET": "STREET_ADDRESS", "SECADDRESS": "STREET_ADDRESS", "SECONDARYADDRESS": "STREET_ADDRESS",
    "ZIPCODE": "STREET_ADDRESS", "POSTCODE": "STREET_ADDRESS",
    "CITY": "LOCATION", "STATE": "LOCATION", "COUNTRY": "LOCATION", "COUNTY": "LOCATION",
    "CREDITCARDNUMBER": "CREDIT_CARD", "CREDITCARD": "CREDIT_CARD",
    "DATEOFBIRTH": "DATE_OF_BIRTH", "DOB": "DATE_OF_BIRTH", "BOD": "DATE_OF_BIRTH",
    "DRIVERLICENSENUM": "DRIVERS_LICENSE", "DRIVERLICENSE": "DRIVERS_LICENSE",
    "EMAIL": "EMAIL",
    "GIVENNAME": "PERSON", "SURNAME": "PERSON", "LASTNAME": "PERSON", "FIRSTNAME": "PERSON",
    "MIDDLENAME": "PERSON", "FULLNAME": "PERSON",
    "IDCARDNUM": None, "IDCARD": None,
    "PASSWORD": "PASSWORD", "PASS": "PASSWORD",
    "SOCIALNUM": "SSN", "SOCIALNUMBER": "SSN", "SSN": "SSN",
    "TAXNUM": "TAX_ID",
    "TELEPHONENUM": "PHONE", "TEL": "PHONE", "PHONENUMBER": "PHONE", "PHONE": "PHONE",
    "USERNAME": "USERNAME",
    "PASSPORT": "PASSPORT_NUMBER", "PASSPORTNUM": "PASSPORT_NUMBER",
    "IP": "IP_ADDRESS", "IPV4": "IP_ADDRESS", "IPV6": "IP_ADDRESS",
    "MAC": "DEVICE_ID", "IMEI": "DEVICE_ID", "PHONEIMEI": "DEVICE_ID",
    "URL": "URL",
    "DATE": "DATE",
    "AGE": "AGE",
    "SEX": "GENDER", "GENDER": "GENDER",
    "IBAN": "IBAN", "BIC": "SWIFT_CODE",
    "BITCOINADDRESS": "CRYPTO_WALLET", "ETHEREUMADDRESS": "CRYPTO_WALLET", "LITECOINADDRESS": "CRYPTO_WALLET",
    "VEHICLEVIN": "VEHICLE_ID", "VEHICLEVRM": "LICENSE_PLATE",
    "COMPANYNAME": "ORGANIZATION",
    "PIN": "PIN",
    "TIME": None, "TITLE": None, "PREFIX": None, "CARDISSUER": None, "GEOCOORD": None,
    "NEARBYGPSCOORDINATE": None, "JOBTITLE": None, "JOBAREA": None, "JOBTYPE": None, "CREDITCARDCVV": None,
    "CREDITCARDISSUER": None, "AMOUNT": None, "CURRENCY": None, "CURRENCYCODE": None, "CURRENCYNAME": None,
    "CURRENCYSYMBOL": None, "MASKEDNUMBER": None, "USERAGENT": None, "EYECOLOR": None, "HEIGHT": None,
    "ORDINALDIRECTION": None,
}


def normalize_ai4privacy(label):
    return re.sub(r"\d+$", "", re.sub(r"[^A-Z0-9]", "", label.upper()))


# Nemotron-PII, Gretel finance and Gretel masking v1 share lower-case snake names.
SNAKE = {
    "account_number": "ACCOUNT_NUMBER", "customer_id": "ACCOUNT_NUMBER", "age": "AGE",
    "bank_routing_number": "BANK_ACCOUNT", "bban": "BANK_ACCOUNT", "biometric_identifier": "BIOMETRIC",
    "city": "LOCATION", "country": "LOCATION", "county": "LOCATION", "state": "LOCATION",
    "company_name": "ORGANIZATION", "company": "ORGANIZATION",
    "credit_debit_card": "CREDIT_CARD", "credit_card_number": "CREDIT_CARD",
    "date": "DATE", "date_time": "DATE", "date_of_birth": "DATE_OF_BIRTH",
    "device_identifier": "DEVICE_ID", "mac_address": "DEVICE_ID",
    "email": "EMAIL", "employee_id": "EMPLOYEE_ID",
    "first_name": "PERSON", "last_name": "PERSON", "name": "PERSON", "middle_name": "PERSON",
    "gender": "GENDER", "health_plan_beneficiary_number": "INSURANCE_NUMBER",
    "ipv4": "IP_ADDRESS", "ipv6": "IP_ADDRESS", "ip_address": "IP_ADDRESS",
    "license_plate": "LICENSE_PLATE", "medical_record_number": "MEDICAL_RECORD",
    "password": "PASSWORD", "phone_number": "PHONE", "fax_number": "PHONE",
    "pin": "PIN", "account_pin": "PIN",
    "political_view": "POLITICAL_AFFILIATION", "religious_belief": "RELIGION", "sexuality": "SEXUAL_ORIENTATION",
    "postcode": "STREET_ADDRESS", "street_address": "STREET_ADDRESS",
    "ssn": "SSN", "swift_bic": "SWIFT_CODE", "swift_bic_code": "SWIFT_CODE", "tax_id": "TAX_ID",
    "url": "URL", "user_name": "USERNAME", "vehicle_identifier": "VEHICLE_ID",
    "driver_license_number": "DRIVERS_LICENSE", "passport_number": "PASSPORT_NUMBER", "iban": "IBAN",
    "nationality": "NATIONALITY", "marital_status": "MARITAL_STATUS", "salary": "SALARY",
    "student_id": "STUDENT_ID", "crypto_wallet": "CRYPTO_WALLET", "criminal_record": "CRIMINAL_RECORD",
    "medical_condition": "HEALTH_CONDITION", "health_condition": "HEALTH_CONDITION",
    "api_key": None, "blood_type": None, "certificate_license_number": None, "coordinate": None,
    "cvv": None, "credit_card_security_code": None, "education_level": None, "employment_status": None,
    "http_cookie": None, "language": None, "national_id": None, "occupation": None, "race_ethnicity": None,
    "time": None, "unique_id": None, "local_latlng": None,
}


def normalize_snake(label):
    return label.strip().lower().replace("-", "_").replace(" ", "_")


# presidio-research (microsoft), both the v2 entity names and the generator's.
PRESIDIO = {
    "PERSON": "PERSON", "STREET_ADDRESS": "STREET_ADDRESS", "ADDRESS": "STREET_ADDRESS", "ZIP_CODE": "STREET_ADDRESS",
    "GPE": "LOCATION", "LOCATION": "LOCATION", "ORGANIZATION": "ORGANIZATION", "CREDIT_CARD": "CREDIT_CARD",
    "DATE_TIME": "DATE", "PHONE_NUMBER": "PHONE", "AGE": "AGE", "NRP": "NATIONALITY", "EMAIL_ADDRESS": "EMAIL",
    "DOMAIN_NAME": "URL", "IBAN_CODE": "IBAN", "US_SSN": "SSN", "IP_ADDRESS": "IP_ADDRESS",
    "US_DRIVER_LICENSE": "DRIVERS_LICENSE", "TITLE": None, "PREFIX": None,
}

# WNUT-17 entity classes. A product or creative work is labelled and known to be no PII type (NOT_PII, a negative
# for every type); CoNLL's MISC, by contrast, maps to None (left out): it holds nationalities.
WNUT17 = {"person": "PERSON", "location": "LOCATION", "corporation": "ORGANIZATION", "group": "ORGANIZATION",
          "product": NOT_PII, "creative-work": NOT_PII}
